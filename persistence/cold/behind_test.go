package cold

import (
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// The cold tier loses its newest records while the shipper runs (restored
// from an older backup, the server never down): the shipper, going on
// from where it remembers, would leave a gap nothing fills, and warm
// retention then delete the records it lacks. Its next batch is not
// counted; it asks the cold tier again and ships the lost records anew.
func TestShipperRefillsWhatTheColdTierLost(t *testing.T) {
	t.Parallel()
	_, warm, _, c := tiers(t)
	fill(t, warm, 4) // 20 records
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping")
	ctx := context.Background()
	const kept = 12
	recs, err := warm.ReadChain(ctx, kept-1, kept)
	if err != nil || len(recs) != 1 {
		t.Fatalf("warm record %d: %v", kept, err)
	}
	for _, tb := range tables {
		if _, err := c.db.ExecContext(ctx, "DELETE FROM "+tb+" WHERE chain_id = ? AND chain_seq > ?", warm.ChainID(), kept); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.db.ExecContext(ctx, "UPDATE chains SET shipped_seq = ?, head_hash = ? WHERE chain_id = ?", kept, recs[0].Hash, warm.ChainID()); err != nil {
		t.Fatal(err)
	}
	fill(t, warm, 2) // 10 more, after what the cold tier lost
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping after the loss")
	st, ok, err := c.Chain(ctx, warm.ChainID())
	if err != nil || !ok {
		t.Fatalf("cold chain state: %v %v", ok, err)
	}
	if rep, err := c.VerifyChain(ctx, st); err != nil || rep.StartSeq != 0 || rep.HeadSeq != 30 {
		t.Fatalf("cold chain after the loss: %+v %v", rep, err)
	}
}
