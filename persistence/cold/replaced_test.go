package cold

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
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

// The cold tier, asked for its position, holds less than the warm store's
// shipped mark says (replaced by a database holding only the start of the
// chain): the mark comes down to what the cold tier holds, so that
// retention, which deletes only shipped records, keeps the rest in warm
// until they are shipped again. Here the shipper may only read (a
// read-only token), so the rest never ships and the lowered mark stays
// in view.
func TestShippedMarkComesDownToTheColdTier(t *testing.T) {
	t.Parallel()
	pub, priv := sqldtest.NewKey(t)
	srv := sqldtest.Start(t, sqldtest.Options{JWTKey: pub})
	warm, _ := openWarm(t)
	rw := openCold(t, srv.URL(), sqldtest.Token(t, priv, map[string]any{"a": "rw"}))
	fill(t, warm, 4)
	first := startShipper(t, warm, rw)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, first, warm), "first records shipped")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	srv.Wipe(t)
	ctx := t.Context()
	const kept = 7 // what the replacement holds: chain_seq 1..kept
	recs, err := warm.ReadChain(ctx, 0, kept)
	if err != nil {
		t.Fatal(err)
	}
	rw.recheckSchema()
	if err := rw.Ship(ctx, Batch{ChainID: warm.ChainID(), Prev: auditchain.Genesis(warm.ChainID()), Records: recs}); err != nil {
		t.Fatal(err)
	}

	ro := openCold(t, srv.URL(), sqldtest.Token(t, priv, map[string]any{"a": "ro"}))
	sh := startShipper(t, warm, ro)
	testenv.Eventually(t, 60*time.Second, func() bool {
		n, err := warm.ShippedSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n == kept
	}, "the warm mark to come down to what the cold tier holds")
	testenv.Eventually(t, 60*time.Second, func() bool { return sh.Status().Failures > 0 }, "the read-only shipper to fail shipping the rest")
	if n, err := warm.ShippedSeq(ctx); err != nil || n != kept {
		t.Errorf("warm mark %d (%v) after the failed ship, want %d", n, err, kept)
	}
	if s := sh.Status(); s.ShippedSeq != kept {
		t.Errorf("shipper status %+v, want shipped up to %d", s, kept)
	}
}
