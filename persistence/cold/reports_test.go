package cold

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Every ready-made report gives the same answer on the warm store, on the
// cold tier (from its records) and on the merged view (from the summaries
// it rebuilds) once everything is shipped.
func TestReportsAgreeAcrossTiers(t *testing.T) {
	t.Parallel()
	_, warm, path, c := tiers(t)
	fill(t, warm, 12)
	for i := range 3 { // runs of a scheduled job, as the scheduler records them (the job-runs report)
		run := fmt.Sprintf(`{"job":"j1","scheduled":"2026-11-%02dT06:00:00Z","outcome":"succeeded"}`, 1+i)
		if err := warm.RecordEvent(context.Background(), persistence.Event{Node: "n1", AgentID: "edge-1",
			Kind: persistence.EventJobRun, Detail: []byte(run)}); err != nil {
			t.Fatal(err)
		}
	}
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping")
	merged, err := MergeTiers(context.Background(), path, c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	str := func(rows [][]any) string { return fmt.Sprint(rows) }
	for _, r := range sqlite.Reports {
		var args []any
		switch r.Arg {
		case "":
		case "job":
			args = append(args, "j1")
		default:
			args = append(args, "c1")
		}
		w, err := sqlite.QueryReadOnly(context.Background(), path, r.Query, args...)
		if err != nil {
			t.Fatalf("%s on warm: %v", r.Name, err)
		}
		if len(w.Rows) == 0 {
			t.Fatalf("%s on warm: no rows; the test data should exercise every report", r.Name)
		}
		_, cr, err := c.Query(context.Background(), r.RawQuery(), args...) // cold keeps no summaries
		if err != nil {
			t.Fatalf("%s on cold: %v", r.Name, err)
		}
		m, err := sqlite.QueryReadOnly(context.Background(), merged, r.Query, args...)
		if err != nil {
			t.Fatalf("%s on all: %v", r.Name, err)
		}
		if str(w.Rows) != str(cr) || str(w.Rows) != str(m.Rows) {
			t.Errorf("%s differs:\nwarm %v\ncold %v\nall  %v", r.Name, w.Rows, cr, m.Rows)
		}
	}
}
