package cold

import (
	"context"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// TestShipConfirmsTheBatchIsStored: a proxy that acknowledges the batches
// it does not pass on does not make the node count them as shipped.
func TestShipConfirmsTheBatchIsStored(t *testing.T) {
	srv, warm, _, _ := tiers(t)
	fill(t, warm, 2)
	h := dropBatches(t, srv.URL(), "INSERT INTO chains")
	c := openCold(t, h.URL, "")
	ctx := context.Background()
	recs, err := warm.ReadChain(ctx, 0, 100)
	if err != nil || len(recs) == 0 {
		t.Fatalf("read warm chain: %d records, %v", len(recs), err)
	}
	err = c.Ship(ctx, Batch{ChainID: warm.ChainID(), Records: recs, Prev: auditchain.Genesis(warm.ChainID())})
	if err == nil {
		t.Fatal("Ship reported success for a batch the cold tier does not hold")
	}
	t.Log(err)
}
