package cold

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// The cold tier committed a batch but its answer never came back (the
// server died after its commit, the connection broke): the shipper finds
// the records there when it asks for its position, ships nothing again,
// and moves the warm store's shipped mark up to them. Before, the mark
// stayed where it was until newer records shipped: the lag said records
// were waiting that the cold tier held, and retention kept them.
func TestShippedMarkFollowsTheColdTier(t *testing.T) {
	t.Parallel()
	_, warm, path, c := tiers(t)
	fill(t, warm, 4)
	first := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, first, warm), "first records shipped")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// The next records reach the cold tier without the warm store
	// hearing of it: a batch whose acknowledgement was lost.
	fill(t, warm, 4)
	ctx := t.Context()
	marked, err := warm.ShippedSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, err := warm.HeadSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, ok, err := c.Chain(ctx, warm.ChainID())
	if err != nil || !ok || st.ShippedSeq != marked {
		t.Fatalf("cold chain %+v, %v, %v; want shipped up to the warm mark %d", st, ok, err, marked)
	}
	prev, err := auditchain.ParseDigest(st.HeadHash)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := warm.ReadChain(ctx, marked, head)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ship(ctx, Batch{ChainID: warm.ChainID(), AfterSeq: marked, Prev: prev, Records: recs}); err != nil {
		t.Fatal(err)
	}

	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "the warm mark to reach what the cold tier holds")
	if s := sh.Status(); s.Lag != 0 || s.ShippedSeq != head {
		t.Errorf("shipper status %+v, want shipped up to %d and no lag", s, head)
	}
	checkSame(t, c, path, warm.ChainID())
}
