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
	"github.com/evoclaw/evoclaw/persistence/hot"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

func record(t *testing.T, tr *Tiers, n int) {
	t.Helper()
	for i := range n {
		c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, Tool: "shell", Status: persistence.StatusSuccess, ElapsedMs: int64(i)}
		if err := tr.Warm.RecordToolCall(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
}

// Without a cold tier: the ring fills, retention runs and keeps everything,
// there is no cold status.
func TestWarmOnly(t *testing.T) {
	t.Parallel()
	tr, err := Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{}, Config{HotCapacity: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	record(t, tr, 5)
	if got := tr.Ring.After(0, hot.Filter{}, 0); len(got) != 3 || got[2].Seq != 5 {
		t.Fatalf("ring %v", got)
	}
	testenv.Eventually(t, 30*time.Second, func() bool { return !tr.Status().Retention.LastRun.IsZero() }, "a retention pass")
	if st := tr.Status(); st.Cold != nil || st.Retention.TotalDeleted != 0 {
		t.Fatalf("status %+v", st)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// With a cold tier (token from the environment): records reach it and the
// status reports no lag.
func TestWithColdTier(t *testing.T) {
	pub, priv := sqldtest.NewKey(t)
	srv := sqldtest.Start(t, sqldtest.Options{JWTKey: pub})
	t.Setenv(cold.TokenEnv, sqldtest.Token(t, priv, map[string]any{"a": "rw"}))
	cfg := Config{Cold: cold.Config{URL: srv.URL(), PollInterval: 10 * time.Millisecond, MinBackoff: 10 * time.Millisecond}}
	tr, err := Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	record(t, tr, 7)
	testenv.Eventually(t, 30*time.Second, func() bool {
		st := tr.Status()
		return st.Cold != nil && st.Cold.ShippedSeq == 7 && st.Cold.Lag == 0
	}, "the cold tier to catch up")
	if st := tr.Status(); st.Cold.LastError != "" {
		t.Fatalf("cold status %+v", st.Cold)
	}
}

// ValidateSync fills in "normal", keeps the two known settings and refuses
// anything else, naming the key.
func TestValidateSync(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", sqlite.SyncNormal, ""},
		{"normal", sqlite.SyncNormal, ""},
		{"full", sqlite.SyncFull, ""},
		{"FULL", "FULL", `audit_sync: "FULL", want "normal" or "full"`},
		{"off", "off", `audit_sync: "off"`},
	} {
		sync := tc.in
		if !testenv.WantErr(t, ValidateSync(&sync), tc.err) && sync != tc.want {
			t.Errorf("ValidateSync(%q) left %q, want %q", tc.in, sync, tc.want)
		}
	}
}
