package cold

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Every ready-made report gives the same answer on the warm store, on the
// cold tier (from the summaries its triggers keep) and on the merged view
// (from the summaries it rebuilds) once everything is shipped, and the
// same as its query over the records on each.
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
		_, cr, err := c.Query(context.Background(), r.Query, args...)
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
		if r.Raw == "" {
			continue
		}
		_, raw, err := c.Query(context.Background(), r.Raw, args...)
		if err != nil {
			t.Fatalf("%s over the cold records: %v", r.Name, err)
		}
		if _, same := sqlite.SameRows(&sqlite.Result{Rows: cr}, &sqlite.Result{Rows: raw}); !same {
			t.Errorf("%s on cold: the summaries say\n%v\nthe records\n%v", r.Name, cr, raw)
		}
	}
}

// A cold database of schema v2 holding records gets their summaries built
// by the upgrade to v3; records shipped afterwards are added by the
// triggers, once each even when their batch is shipped again.
func TestColdSummariesUpgradeAndReship(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := sqldtest.Start(t, sqldtest.Options{})
	c := openCold(t, srv.URL(), "")
	for _, stmt := range append(append([]string(nil), schema...), upgrades[0], `UPDATE schema_meta SET value = '2' WHERE key = 'version'`) {
		if _, err := c.db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	warm, _ := openWarm(t)
	fill(t, warm, 30)   // more tool calls in a day than the day's ranking keeps
	for i := range 10 { // and some slower ones the ranking takes in later
		if err := warm.RecordToolCall(ctx, persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, Tool: "slow",
			Status: persistence.StatusSuccess, ElapsedMs: int64(100 - 3*i)}); err != nil {
			t.Fatal(err)
		}
	}
	after, prev, err := warm.ChainStart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, err := warm.HeadSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := warm.ReadChain(ctx, after, head)
	if err != nil || len(recs) < 4 {
		t.Fatalf("read warm chain: %d records, %v", len(recs), err)
	}
	half := len(recs) / 2
	first := Batch{ChainID: warm.ChainID(), AfterSeq: after, Prev: prev, Records: recs[:half]}
	// Shipped by a build of cold schema v2: no summaries.
	script, args := shipScript(first)
	if _, err := c.db.ExecContext(ctx, script, args...); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.HasSummaries(ctx); ok || err != nil {
		t.Fatalf("HasSummaries on cold schema v2: %v, %v", ok, err)
	}
	second := Batch{ChainID: warm.ChainID(), AfterSeq: recs[half-1].Seq, Prev: mustDigest(t, recs[half-1].Hash), Records: recs[half:]}
	whole := Batch{ChainID: warm.ChainID(), AfterSeq: after, Prev: prev, Records: recs}
	for _, b := range []Batch{second, whole, second} { // upgrades, then ships again what is there
		if err := c.Ship(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := c.HasSummaries(ctx); !ok || err != nil {
		t.Fatalf("HasSummaries after the upgrade: %v, %v", ok, err)
	}
	_, rows, err := c.Query(ctx, "SELECT (SELECT sum(calls) FROM report_tools), (SELECT count(*) FROM tool_calls)")
	if err != nil || rows[0][0] != rows[0][1] || rows[0][1] == int64(0) {
		t.Fatalf("tool calls summarized / held in cold: %v, %v", rows, err)
	}
	for _, r := range sqlite.Reports {
		if r.Raw == "" {
			continue
		}
		_, got, err := c.Query(ctx, r.Query)
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		_, want, err := c.Query(ctx, r.Raw)
		if err != nil {
			t.Fatalf("%s over the records: %v", r.Name, err)
		}
		if len(want) == 0 {
			t.Fatalf("%s: no rows; the test data should exercise every report", r.Name)
		}
		if _, same := sqlite.SameRows(&sqlite.Result{Rows: got}, &sqlite.Result{Rows: want}); !same {
			t.Errorf("%s on cold: the summaries say\n%v\nthe records\n%v", r.Name, got, want)
		}
	}
}

// mustDigest parses a stored hash.
func mustDigest(t testing.TB, s string) auditchain.Digest {
	t.Helper()
	d, err := auditchain.ParseDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
