package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestInterruptedRuns: what BeginRun and NoteRunProcess record of a request
// survives a reopen; FinishInterrupted audits it once, keeps its report,
// and refuses a second time and a request that finished on its own.
func TestInterruptedRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	run := persistence.Run{Tool: "loop", Params: json.RawMessage(`{"marker":"/w/m"}`), ConversationID: "c1"}
	if st, _, err := s.BeginRun(ctx, "cut", run); err != nil || st != persistence.RequestNew {
		t.Fatalf("BeginRun = %v, %v", st, err)
	}
	proc := persistence.RunProcess{Pgid: 4242, StartTicks: 1 << 40, BootID: "boot-1"}
	if err := s.NoteRunProcess(ctx, "cut", proc); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BeginRequest(ctx, "plain"); err != nil { // begun by an older agent: nothing known
		t.Fatal(err)
	}
	if _, _, err := s.BeginRun(ctx, "finished", run); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRequest(ctx, "finished", []byte("r")); err != nil {
		t.Fatal(err)
	}
	if err := s.NoteRunProcess(ctx, "finished", proc); err != nil { // a no-op once done
		t.Fatal(err)
	}
	// A finished request keeps no copy of its arguments (its tool_calls
	// row has them): they were kept for the hour a done request stays.
	var kept *string
	if err := s.rdb.QueryRowContext(ctx, `SELECT params FROM request_log WHERE request_id = 'finished'`).Scan(&kept); err != nil || kept != nil {
		t.Fatalf("a finished request's params = %v, %v; want NULL", kept, err)
	}

	s = reopen(t, s, path, Options{})
	runs, err := s.InterruptedRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("InterruptedRuns = %+v, want cut and plain", runs)
	}
	byID := map[string]persistence.InterruptedRun{}
	for _, r := range runs {
		byID[r.RequestID] = r
	}
	cut, plain := byID["cut"], byID["plain"]
	if cut.Tool != "loop" || string(cut.Params) != `{"marker":"/w/m"}` || cut.ConversationID != "c1" || cut.Process == nil ||
		*cut.Process != proc || cut.Started.IsZero() {
		t.Errorf("cut = %+v (process %v)", cut, cut.Process)
	}
	if plain.Tool != "" || plain.Params != nil || plain.Process != nil {
		t.Errorf("plain = %+v", plain)
	}

	rec := persistence.ToolCall{Node: "a", Side: persistence.SideEdge, RequestID: "cut", Tool: "loop", Params: cut.Params,
		Status: persistence.StatusError, ErrorType: "interrupted"}
	if err := s.FinishInterrupted(ctx, rec, "cut", []byte("report")); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishInterrupted(ctx, rec, "cut", []byte("again")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second FinishInterrupted: %v, want ErrNotRunning", err)
	}
	if err := s.FinishInterrupted(ctx, rec, "finished", []byte("again")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("FinishInterrupted of a finished request: %v, want ErrNotRunning", err)
	}
	if st, report, err := s.BeginRequest(ctx, "cut"); err != nil || st != persistence.RequestDone || string(report) != "report" {
		t.Fatalf("BeginRequest(cut) = %v %q %v, want done with the interrupted report", st, report, err)
	}
	if n := queryOne(t, path, `SELECT count(*) FROM tool_calls WHERE request_id IN ('cut', 'finished')`); n != int64(1) {
		t.Errorf("%v audit rows, want 1", n)
	}
	if runs, err := s.InterruptedRuns(ctx); err != nil || len(runs) != 1 || runs[0].RequestID != "plain" {
		t.Errorf("InterruptedRuns after = %+v, %v", runs, err)
	}
	if _, err := VerifyChain(ctx, path); err != nil {
		t.Errorf("chain: %v", err)
	}
}

// TestRecordFinishesRun: a tool call record naming the run it ends
// (FinishesRun) marks it done in its own transaction, whether written at
// once or queued, so the run is no longer interrupted after a reopen; a
// record without it leaves the run running.
func TestRecordFinishesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	run := persistence.Run{Tool: "bash", Params: json.RawMessage(`{"command":"true"}`), ConversationID: "c"}
	for _, id := range []string{"recorded", "queued", "unrelated"} {
		if _, _, err := s.BeginRun(ctx, id, run); err != nil {
			t.Fatal(err)
		}
	}
	rec := sampleCall(1)
	rec.FinishesRun = "recorded"
	if err := s.RecordToolCall(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec = sampleCall(2)
	rec.FinishesRun = "queued"
	done := make(chan error, 1)
	if err := s.QueueToolCall(rec, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.RecordToolCall(ctx, sampleCall(3)); err != nil { // ends no run
		t.Fatal(err)
	}
	s = reopen(t, s, path, Options{})
	runs, err := s.InterruptedRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].RequestID != "unrelated" {
		t.Fatalf("InterruptedRuns = %+v, want only unrelated", runs)
	}
	// A finished run is answered from the log, never run again.
	if st, _, err := s.BeginRun(ctx, "queued", run); err != nil || st != persistence.RequestDone {
		t.Fatalf("BeginRun of a finished run = %v, %v; want done", st, err)
	}
}
