package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

func TestRequestLogStates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		report []byte
		want   []byte
	}{
		{"json report", []byte(`{"status":"ok","result":"42"}`), []byte(`{"status":"ok","result":"42"}`)},
		{"binary report", []byte{0, 1, 0xff, '\n'}, []byte{0, 1, 0xff, '\n'}},
		{"empty report", []byte{}, []byte{}},
		{"nil report", nil, []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openStore(t, Options{})
			ctx := context.Background()
			const id = "req-1"
			check := func(step string, wantState persistence.RequestState, wantReport []byte) {
				t.Helper()
				state, report, err := s.BeginRequest(ctx, id)
				if err != nil {
					t.Fatalf("%s: BeginRequest: %v", step, err)
				}
				if state != wantState || !bytes.Equal(report, wantReport) || (wantReport != nil && report == nil) {
					t.Fatalf("%s: got %v %q, want %v %q", step, state, report, wantState, wantReport)
				}
			}
			check("first begin", persistence.RequestNew, nil)
			check("begin again before finish", persistence.RequestRunning, nil)
			if err := s.FinishRequest(ctx, id, tt.report); err != nil {
				t.Fatalf("FinishRequest: %v", err)
			}
			check("begin after finish", persistence.RequestDone, tt.want)
			if err := s.FinishRequest(ctx, id, []byte("second report")); err != nil {
				t.Fatalf("second FinishRequest: %v", err)
			}
			check("a second finish keeps the first report", persistence.RequestDone, tt.want)
		})
	}
}

func TestRequestLogSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	if _, _, err := s.BeginRequest(ctx, "crashed"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BeginRequest(ctx, "finished"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRequest(ctx, "finished", []byte("reply")); err != nil {
		t.Fatal(err)
	}

	s = reopen(t, s, path, Options{})
	tests := []struct {
		id         string
		wantState  persistence.RequestState
		wantReport string
	}{
		{"crashed", persistence.RequestRunning, ""},
		{"finished", persistence.RequestDone, "reply"},
		{"unseen", persistence.RequestNew, ""},
	}
	for _, tt := range tests {
		state, report, err := s.BeginRequest(ctx, tt.id)
		if err != nil || state != tt.wantState || string(report) != tt.wantReport {
			t.Errorf("BeginRequest(%q) after reopen = %v %q %v, want %v %q", tt.id, state, report, err, tt.wantState, tt.wantReport)
		}
	}
}

func TestFinishWithoutBegin(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	if err := s.FinishRequest(ctx, "r", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if state, report, err := s.BeginRequest(ctx, "r"); err != nil || state != persistence.RequestDone || string(report) != "x" {
		t.Fatalf("BeginRequest = %v %q %v, want done x", state, report, err)
	}
}

func TestEmptyRequestID(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	if _, _, err := s.BeginRequest(ctx, ""); err == nil {
		t.Error("BeginRequest(\"\") succeeded")
	}
	if err := s.FinishRequest(ctx, "", nil); err == nil {
		t.Error("FinishRequest(\"\") succeeded")
	}
}

func TestPruneRequests(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	ctx := context.Background()
	for _, id := range []string{"done-1", "done-2", "running"} {
		if _, _, err := s.BeginRequest(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"done-1", "done-2"} {
		if err := s.FinishRequest(ctx, id, []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneRequests(ctx, time.Now().Add(-time.Hour))
	if err != nil || n != 0 {
		t.Fatalf("PruneRequests(an hour ago) = %d, %v; want nothing pruned", n, err)
	}
	n, err = s.PruneRequests(ctx, time.Now().Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PruneRequests(in an hour) = %d, %v; want 2", n, err)
	}
	if left := queryOne(t, path, "SELECT group_concat(request_id) FROM request_log"); left != "running" {
		t.Fatalf("request_log after prune holds %v, want only the running request", left)
	}
}

func TestFinishToolCallIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t, Options{})
	if _, _, err := s.BeginRequest(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	rec := persistence.ToolCall{RecordID: "rec-1", Node: "pi", Side: persistence.SideEdge, RequestID: "r1", Tool: "t", Status: persistence.StatusSuccess}
	if err := s.FinishToolCall(ctx, rec, "r1", []byte(`{"ok":1}`)); err != nil {
		t.Fatal(err)
	}
	state, report, err := s.BeginRequest(ctx, "r1")
	if err != nil || state != persistence.RequestDone || string(report) != `{"ok":1}` {
		t.Fatalf("request state %v %q %v", state, report, err)
	}
	// A row that fails inside the transaction (its record id is taken)
	// leaves the request unfinished: nothing of the pair is stored.
	dup := rec
	dup.RequestID = "r2"
	if _, _, err := s.BeginRequest(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishToolCall(ctx, dup, "r2", []byte(`{}`)); err == nil {
		t.Fatal("a duplicate record id was accepted")
	}
	if state, _, _ := s.BeginRequest(ctx, "r2"); state != persistence.RequestRunning {
		t.Fatalf("r2 is %v after a failed finish, want running", state)
	}
	res, err := QueryReadOnly(ctx, path, `SELECT count(*) FROM tool_calls`)
	if err != nil || fmt.Sprint(res.Rows[0][0]) != "1" {
		t.Fatalf("tool_calls %v %v, want 1 row", res.Rows, err)
	}
}
