package cold

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

var tables = []string{"tool_calls", "llm_calls", "messages", "events"}

// checkSame fails unless the cold tier holds exactly the warm rows of every
// chained table, and its chain verifies.
func checkSame(t *testing.T, c *Store, warmPath, chainID string) {
	t.Helper()
	for _, tb := range tables {
		if w, cn := warmCount(t, warmPath, tb), coldCount(t, c, tb); w != cn {
			t.Errorf("%s: warm %d rows, cold %d", tb, w, cn)
		}
	}
	st, ok, err := c.Chain(context.Background(), chainID)
	if err != nil || !ok {
		t.Fatalf("cold chain state: %v %v", ok, err)
	}
	rep, err := c.VerifyChain(context.Background(), st)
	if err != nil {
		t.Fatalf("cold chain does not verify: %v", err)
	}
	if rep.HeadSeq != st.ShippedSeq || rep.StartSeq != 0 {
		t.Fatalf("cold report %+v, state %+v", rep, st)
	}
}

func TestShipAllAndReshipChangesNothing(t *testing.T) {
	t.Parallel()
	_, warm, path, c := tiers(t)
	fill(t, warm, 30) // 150 records, 3 batches of 50
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipper to catch up")
	checkSame(t, c, path, warm.ChainID())
	if st := sh.Status(); st.Lag != 0 || st.Shipped != 150 || st.LastError != "" {
		t.Fatalf("status %+v", st)
	}
	sh.Close()

	// Ship the first batch again, as after a crash between the cold commit
	// and the warm mark: nothing changes.
	recs, err := warm.ReadChain(context.Background(), 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := c.Chain(context.Background(), warm.ChainID())
	if err := c.Ship(context.Background(), Batch{ChainID: warm.ChainID(), AfterSeq: 0, Prev: auditchain.Genesis(warm.ChainID()), Records: recs}); err != nil {
		t.Fatal(err)
	}
	after, _, _ := c.Chain(context.Background(), warm.ChainID())
	if before != after {
		t.Fatalf("re-ship moved the chain state: %+v -> %+v", before, after)
	}
	checkSame(t, c, path, warm.ChainID())

	// A batch with a hole is refused before anything is sent.
	err = c.Ship(context.Background(), Batch{ChainID: warm.ChainID(), AfterSeq: 0, Records: recs[1:]})
	if !errors.Is(err, ErrBadBatch) {
		t.Fatalf("batch with a hole: %v", err)
	}
}

func TestServerDownThenBack(t *testing.T) {
	t.Parallel()
	srv, warm, path, c := tiers(t)
	sh := startShipper(t, warm, c)
	fill(t, warm, 10)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "first records shipped")

	srv.Kill()
	fill(t, warm, 20) // written while the cold tier is unreachable
	testenv.Eventually(t, 60*time.Second, func() bool {
		sh.Kick()
		st := sh.Status()
		return st.Failures >= 2 && st.LastError != "" && st.Lag > 0
	}, "the shipper to notice the outage")
	if st := sh.Status(); st.RetryIn <= 0 || st.RetryIn > c.cfg.MaxBackoff {
		t.Fatalf("backoff %v outside (0, %v]", st.RetryIn, c.cfg.MaxBackoff)
	}
	srv.Restart()
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipper to catch up after the outage")
	checkSame(t, c, path, warm.ChainID())
	if st := sh.Status(); st.LastError != "" || st.Failures != 0 {
		t.Fatalf("status after recovery %+v", st)
	}
}

func TestAuthToken(t *testing.T) {
	t.Parallel()
	pub, priv := sqldtest.NewKey(t)
	srv := sqldtest.Start(t, sqldtest.Options{JWTKey: pub})
	warm, path := openWarm(t)
	fill(t, warm, 2)
	_, otherKey := sqldtest.NewKey(t)
	wrong := sqldtest.Token(t, otherKey, map[string]any{"a": "rw"})

	for name, token := range map[string]string{"none": "", "wrong key": wrong} {
		c := openCold(t, srv.URL(), token)
		recs, err := warm.ReadChain(context.Background(), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Ship(context.Background(), Batch{ChainID: warm.ChainID(), Prev: auditchain.Genesis(warm.ChainID()), Records: recs})
		if err == nil {
			t.Fatalf("token %s: ship succeeded", name)
		}
		if !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
			t.Errorf("token %s: error does not say unauthorized: %v", name, err)
		}
		if token != "" && strings.Contains(err.Error(), token) {
			t.Fatalf("error leaks the token: %v", err)
		}
	}

	good := sqldtest.Token(t, priv, map[string]any{"a": "rw"})
	c := openCold(t, srv.URL(), good)
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping with the right token")
	checkSame(t, c, path, warm.ChainID())

	// A read-only token reads but cannot write, refused by the server.
	ro := openCold(t, srv.URL(), sqldtest.Token(t, priv, map[string]any{"a": "ro"}))
	if n := coldCount(t, ro, "tool_calls"); n != 2 {
		t.Fatalf("read-only token reads %d tool calls, want 2", n)
	}
	if _, _, err := ro.Query(context.Background(), "DELETE FROM tool_calls"); err == nil {
		t.Fatal("read-only token deleted rows")
	}
}

func TestQueryIsReadOnly(t *testing.T) {
	t.Parallel()
	_, warm, _, c := tiers(t)
	fill(t, warm, 1)
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping")
	for _, q := range []string{
		"DELETE FROM tool_calls",
		"UPDATE events SET kind = 'x'",
		"INSERT INTO chains (chain_id, first_seq, first_prev, shipped_seq, head_hash, updated_ts) VALUES ('x', 1, 'x', 1, 'x', 'x')",
		"CREATE TABLE evil (a)",
		"DROP TABLE events",
		// Settings and checkpoints: the in-memory copy the query is
		// vetted on has no journal to change, so they are refused by name.
		"PRAGMA journal_mode = DELETE",
		"PRAGMA wal_checkpoint(TRUNCATE)",
		"pragma main.synchronous=OFF",
		"PRAGMA hard_heap_limit = 1",
	} {
		_, _, err := c.Query(context.Background(), q)
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%q: got %v, want ErrReadOnly", q, err)
		}
	}
	if n := coldCount(t, c, "tool_calls"); n != 1 {
		t.Fatalf("tool_calls has %d rows after refused writes, want 1", n)
	}
}

// A node that pruned warm records before it had a cold tier: its cold copy
// starts at the warm checkpoint, verifies from there, and joins warm.
func TestShipAfterWarmPrune(t *testing.T) {
	t.Parallel()
	_, warm, _, c := tiers(t)
	fill(t, warm, 4) // 20 records
	res, err := warm.Prune(context.Background(), sqlite.Retention{MaxAge: time.Nanosecond, Batch: 7}, time.Now().Add(time.Hour))
	if err != nil || res.UpToSeq != 7 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping")
	st, ok, err := c.Chain(context.Background(), warm.ChainID())
	if err != nil || !ok || st.FirstSeq != 8 || st.ShippedSeq != 20 {
		t.Fatalf("cold chain %+v %v %v", st, ok, err)
	}
	rep, err := c.VerifyChain(context.Background(), st)
	if err != nil || rep.Verified != 13 || rep.StartSeq != 7 {
		t.Fatalf("cold verify: %+v %v", rep, err)
	}
	if n := coldCount(t, c, "tool_calls") + coldCount(t, c, "llm_calls") + coldCount(t, c, "messages") + coldCount(t, c, "events"); n != 13 {
		t.Fatalf("cold holds %d records, want 13", n)
	}
}

func TestShipperLifecycle(t *testing.T) {
	t.Parallel()
	warm, _ := openWarm(t)
	c := openCold(t, "http://127.0.0.1:1", "") // never contacted
	sh := NewShipper(warm, c, nil)
	if err := sh.Close(); err != nil { // Close without Start
		t.Fatal(err)
	}
	if err := sh.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("Start after Close: %v", err)
	}
	sh2 := NewShipper(warm, c, nil)
	if err := sh2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sh2.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	fill(t, warm, 1)
	testenv.Eventually(t, 60*time.Second, func() bool { sh2.Kick(); return sh2.Status().Failures > 0 }, "a failure against a closed port")
	sh2.Close()
	sh2.Close()
}

func TestConfig(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string // empty: valid
	}{
		{Config{URL: "libsql://db.example"}, ""},
		{Config{URL: "http://127.0.0.1:8080"}, ""},
		{Config{}, "url is empty"},
		{Config{URL: "ftp://x"}, `scheme "ftp"`},
		{Config{URL: "https://user:pw@x"}, "must not carry credentials"},
		{Config{URL: "https://x?authToken=abc"}, "must not carry credentials"},
		{Config{URL: "https://x", BatchSize: -1}, "must not be negative"},
	}
	for _, tt := range tests {
		got, err := tt.cfg.withDefaults()
		if tt.want == "" {
			if err != nil || got.BatchSize != DefaultBatchSize || got.MaxBackoff != DefaultMaxBackoff {
				t.Errorf("%+v: %+v %v", tt.cfg, got, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want %q", tt.cfg, err, tt.want)
		}
	}
	t.Setenv(TokenEnv, "secret-token")
	c := Config{URL: "https://x"}.FromEnv()
	if c.AuthToken != "secret-token" || strings.Contains(c.String(), "secret-token") || !strings.Contains(c.String(), "token set") {
		t.Fatalf("FromEnv/String: %q", c.String())
	}
}

// A warm store restored from an older copy (same chain, fewer records) is
// not shipped over the cold tier's newer records: the shipper reports it.
func TestColdAheadOfWarm(t *testing.T) {
	t.Parallel()
	_, warm, path, c := tiers(t)
	fill(t, warm, 1) // 5 records
	backup := filepath.Join(t.TempDir(), "backup.db")
	copyFile(t, path, backup)
	fill(t, warm, 1) // 10 records
	shipAll(t, warm, c)
	// The backup's anchors are sealed with the node's key, kept apart from it.
	restored, err := sqlite.Open(backup, sqlite.Options{KeyFile: sqlite.DefaultKeyFile(path)})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	sh2 := startShipper(t, restored, c)
	testenv.Eventually(t, 60*time.Second, func() bool {
		sh2.Kick()
		return strings.Contains(sh2.Status().LastError, ErrAhead.Error())
	}, "the shipper to refuse")
}

// copyFile copies the database at src, consistently, to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	db, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("VACUUM INTO ?", dst); err != nil {
		t.Fatal(err)
	}
}
