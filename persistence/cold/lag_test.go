package cold

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestLagIsCurrentDuringOutage: while the cold tier is down the shipper's
// status (what /v1/status and /metrics show) counts every record waiting,
// as `audit status` does, not the lag of its last successful step; the
// shipper retries with a long backoff here, so nothing but the status
// itself may bring the figure up to date.
func TestLagIsCurrentDuringOutage(t *testing.T) {
	t.Parallel()
	srv := sqldtest.Start(t, sqldtest.Options{})
	warm, path := openWarm(t)
	c, err := Open(Config{URL: srv.URL(), BatchSize: 50, PollInterval: 20 * time.Millisecond,
		MinBackoff: time.Hour, MaxBackoff: time.Hour, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sh := startShipper(t, warm, c)
	fill(t, warm, 2)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "first records shipped")

	srv.Kill()
	fill(t, warm, 3) // 15 records written while the cold tier is down
	testenv.Eventually(t, 30*time.Second, func() bool { sh.Kick(); return sh.Status().LastError != "" }, "the outage noticed")
	fill(t, warm, 4) // 20 more, during the backoff
	ws, err := sqlite.ReadStatus(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if st := sh.Status(); st.Lag != 35 || st.Lag != ws.Lag() || st.HeadSeq != 45 || st.ShippedSeq != 10 {
		t.Fatalf("shipper status %+v; audit status lag %d: want 35 waiting", st, ws.Lag())
	}
	srv.Restart()
}

// TestWarmEmptiedByRetention: once retention has deleted every shipped
// record from warm, the chain's head is the last deleted record: the
// shipper goes on (no "cold tier is ahead"), `audit status` shows that
// head, and the next record ships and verifies in cold.
func TestWarmEmptiedByRetention(t *testing.T) {
	t.Parallel()
	_, warm, path, c := tiers(t)
	var logs testenv.Buffer
	sh := NewShipper(warm, c, slog.New(slog.NewTextHandler(&logs, nil)))
	if err := sh.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	fill(t, warm, 2)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "records shipped")
	res, err := warm.Prune(context.Background(), sqlite.Retention{MaxAge: time.Nanosecond, Batch: 100}, time.Now().Add(time.Hour))
	if err != nil || res.UpToSeq != 10 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	if head, err := warm.HeadSeq(context.Background()); err != nil || head != 10 {
		t.Fatalf("head of an emptied warm store: %d %v, want 10", head, err)
	}
	ws, err := sqlite.ReadStatus(context.Background(), path)
	if err != nil || ws.HeadSeq != 10 || ws.Records != 0 || ws.Lag() != 0 {
		t.Fatalf("audit status %+v %v", ws, err)
	}
	for range 5 { // several passes of the shipper over the empty store
		sh.Kick()
		time.Sleep(30 * time.Millisecond) // a window for a pass, not a wait for an outcome
	}
	if st := sh.Status(); st.LastError != "" || st.Lag != 0 || strings.Contains(logs.String(), ErrAhead.Error()) {
		t.Fatalf("status %+v, logs:\n%s", st, logs.String())
	}
	fill(t, warm, 1)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "the next records shipped")
	st, _, err := c.Chain(context.Background(), warm.ChainID())
	if err != nil || st.ShippedSeq != 15 {
		t.Fatalf("cold chain %+v %v", st, err)
	}
	if _, err := c.VerifyChain(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}
