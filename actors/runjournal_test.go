package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills"
)

// TestLocalRunsAreJournaled: with a Journal, every run of a local tool is
// recorded before it starts and ended by its own audit row, whether it
// succeeded or was cut by its timeout, so nothing is left running for the
// next start to call interrupted; without an audit log nothing is
// journaled (no row could end it).
func TestLocalRunsAreJournaled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	store, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	obj := map[string]any{"type": "object"}
	local := &LocalTools{
		List: func() []skills.ToolDef {
			return []skills.ToolDef{{Name: "quick", Parameters: obj}, {Name: "slow", Parameters: obj}}
		},
		Run: func(ctx context.Context, name string, _ json.RawMessage, _ int64) skills.Output {
			if name == "slow" {
				<-ctx.Done() // cut by the call's timeout
				return skills.Failed("", "cut: "+ctx.Err().Error())
			}
			return skills.Output{Content: []skills.Block{skills.TextBlock(name + " ran")}}
		},
		Journal: store,
	}
	tr := transcript(`{"content":"","tool_calls":[{"id":"q","name":"quick","arguments":{"n":1}},{"id":"s","name":"slow","arguments":{}}]}`,
		`{"content":"{{result q}} / {{result s}}"}`)
	h := newHarness(t, tr, func(o *ConvOptions) {
		o.Toolbox, o.Audit = local, store
		o.TimeoutRules = map[string]TimeoutRule{CategoryOther: {Default: 300 * time.Millisecond, Max: time.Second}}
	})
	if ans := h.chat(t, "go"); ans.Err != nil {
		t.Fatalf("answer %+v", ans)
	}
	query := func(q string) string {
		t.Helper()
		res, err := sqlite.QueryReadOnly(context.Background(), path, q)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(res.Rows)
	}
	// Done, a run's arguments are its audit row's alone (the request log
	// keeps them only while it runs).
	if got, want := query(`SELECT tool, state, params IS NULL FROM request_log ORDER BY tool`), `[[quick done 1] [slow done 1]]`; got != want {
		t.Fatalf("request log %s, want %s", got, want)
	}
	if got, want := query(`SELECT tool, params FROM tool_calls ORDER BY tool`), `[[quick {"n":1}] [slow {}]]`; got != want {
		t.Fatalf("audit rows' arguments %s, want %s", got, want)
	}
	if got, want := query(`SELECT tool, status, coalesce(error_type, '') FROM tool_calls ORDER BY tool`), "[[quick success ] [slow error timeout]]"; got != want {
		t.Fatalf("audit rows %s, want %s", got, want)
	}
	if runs, err := store.InterruptedRuns(context.Background()); err != nil || len(runs) != 0 {
		t.Fatalf("interrupted runs %+v, %v; want none", runs, err)
	}

	// The same box with no audit log journals nothing.
	bare := newHarness(t, transcript(`{"content":"","tool_calls":[{"id":"q","name":"quick","arguments":{"n":2}}]}`, `{"content":"{{result q}}"}`),
		func(o *ConvOptions) { o.Toolbox, o.Audit = local, nil })
	if ans := bare.chat(t, "go"); ans.Err != nil || ans.Text != "quick ran" {
		t.Fatalf("answer without audit %+v", ans)
	}
	if got := query(`SELECT count(*) FROM request_log`); got != "[[2]]" {
		t.Fatalf("request log rows %s after a chat without audit, want the 2 from before", got)
	}
}

// stateJournal answers every BeginRun with its state, or with err.
type stateJournal struct {
	state persistence.RequestState
	err   error
}

func (j stateJournal) BeginRun(context.Context, string, persistence.Run) (persistence.RequestState, []byte, error) {
	return j.state, nil, j.err
}

func (stateJournal) NoteRunProcess(context.Context, string, persistence.RunProcess) error {
	return nil
}

// TestRunNotStartedWithoutItsRecord: a run is started only when its
// journal record is new; otherwise the tool does not run, and the model
// and the audit row say why: the record failed, an attempt before a
// restart of the call's actor started it, or the call ended first.
func TestRunNotStartedWithoutItsRecord(t *testing.T) {
	tests := []struct {
		name      string
		journal   stateJournal
		wantText  string
		wantError string
	}{
		{"record failed", stateJournal{err: errors.New("disk full")},
			"was not run: recording the run before it starts failed: disk full", "internal"},
		{"an earlier attempt started it", stateJournal{state: persistence.RequestRunning},
			"was not run again: an earlier attempt of this call started it and was cut", "interrupted"},
		{"the call ended first", stateJournal{state: persistence.RequestDone},
			"was not run: the call ended before it started", "interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			local := &LocalTools{
				List: func() []skills.ToolDef {
					return []skills.ToolDef{{Name: "quick", Parameters: map[string]any{"type": "object"}}}
				},
				Run: func(context.Context, string, json.RawMessage, int64) skills.Output {
					ran = true
					return skills.Output{}
				},
				Journal: tt.journal,
			}
			h := newHarness(t, transcript(`{"content":"","tool_calls":[{"id":"q","name":"quick","arguments":{}}]}`, `{"content":"{{result q}}"}`),
				func(o *ConvOptions) { o.Toolbox = local })
			ans := h.chat(t, "go")
			if ran || !strings.Contains(ans.Text, tt.wantText) {
				t.Fatalf("ran %v, answer %q, want %q", ran, ans.Text, tt.wantText)
			}
			if recs := h.audit.All(); len(recs) != 1 || recs[0].ErrorType != tt.wantError {
				t.Fatalf("audit %+v, want one row of error type %s", recs, tt.wantError)
			}
		})
	}
}
