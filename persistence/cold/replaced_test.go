package cold

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
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
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "first records shipped")
	srv.Wipe(t)
	fill(t, warm, 4)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipper to catch up on the empty database")
	st, ok, err := c.Chain(t.Context(), warm.ChainID())
	if err != nil || !ok {
		t.Fatalf("cold chain after the wipe: ok=%v err=%v", ok, err)
	}
	if st.FirstSeq != 1 {
		t.Errorf("cold copy starts at chain_seq %d, want 1: the whole warm chain shipped again", st.FirstSeq)
	}
	checkSame(t, c, path, warm.ChainID())
}
