package tiers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// A node starts against a cold tier that no longer holds what the warm
// store's shipped mark says (it was replaced by an empty database, or
// restored from an older backup, while the node was down). Retention runs
// at once at start: deleting by the stale mark lost every record it
// covered, in neither tier since. It now waits until the shipper has set
// the mark from the cold tier; the records are shipped again first, and
// only then deleted from warm.
func TestRetentionWaitsForTheColdTiersMark(t *testing.T) {
	const n = 20
	path := filepath.Join(t.TempDir(), "audit.db")
	ctx := context.Background()
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for i := range n {
		c := persistence.ToolCall{Time: old, Node: "n1", Side: persistence.SideEdge, Tool: "shell", Status: persistence.StatusSuccess, ElapsedMs: int64(i)}
		if err := st.RecordToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// An earlier cold tier held them all.
	if err := st.SetShipped(ctx, n); err != nil {
		t.Fatal(err)
	}
	chainID := st.ChainID()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	srv := sqldtest.Start(t, sqldtest.Options{}) // the replacement: empty
	cfg := Config{RetentionInterval: 10 * time.Millisecond, Retention: sqlite.Retention{WarmWindow: time.Hour},
		Cold: cold.Config{URL: srv.URL(), PollInterval: 10 * time.Millisecond, MinBackoff: 10 * time.Millisecond}}
	tr, err := Open(path, sqlite.Options{}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() bool { return tr.Status().Retention.TotalDeleted == n }, "shipped records pruned from warm")

	c, err := cold.Open(cold.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	chain, ok, err := c.Chain(ctx, chainID)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || chain.FirstSeq != 1 || chain.ShippedSeq != n {
		t.Fatalf("the cold tier holds %+v (ok %v) of the chain, want chain_seq 1..%d: records pruned from warm were never shipped", chain, ok, n)
	}
}
