package cold

import (
	"testing"
)

// The cold database is replaced by an empty one while the shipper runs (an
// operator recreates it, or the server comes back without its data): the
// shipper creates the tables again and ships the whole warm chain anew,
// instead of failing on the missing tables for good.
func TestColdDatabaseReplaced(t *testing.T) {
	t.Parallel()
	srv, warm, path, c := tiers(t)
	fill(t, warm, 4)
	sh := startShipper(t, warm, c)
	waitCaughtUp(t, sh, warm, "first records shipped")
	srv.Wipe(t)
	fill(t, warm, 4)
	waitCaughtUp(t, sh, warm, "shipper to catch up on the empty database")
	st, ok, err := c.Chain(t.Context(), warm.ChainID())
	if err != nil || !ok {
		t.Fatalf("cold chain after the wipe: ok=%v err=%v", ok, err)
	}
	if st.FirstSeq != 1 {
		t.Errorf("cold copy starts at chain_seq %d, want 1: the whole warm chain shipped again", st.FirstSeq)
	}
	checkSame(t, c, path, warm.ChainID())
}
