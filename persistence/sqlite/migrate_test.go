package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// fixture copies testdata/name, an audit database written by an earlier
// evoclaw, into a fresh directory and returns the copy's path.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fixtureV5 copies testdata/v5.db and its key (to the default key file
// beside it) into a fresh directory and returns the database's path.
func fixtureV5(t *testing.T) string {
	t.Helper()
	path := fixture(t, "v5.db")
	key, err := os.ReadFile(filepath.Join("testdata", "v5.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(DefaultKeyFile(path), key, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Databases written by schema v4 (testdata, made by the evoclaw before
// authenticated anchors) upgrade to v5 keeping every record verifiable:
// the upgrade creates the key, authenticates the existing checkpoint,
// bounds the rows that predate the chain and seals the head.
func TestMigrateV4ToSealed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture             string
		start, verified, v2 int64
	}{
		{"v4.db", 1, 15, 0},         // one retention checkpoint
		{"v4-from-v2.db", 0, 16, 3}, // three rows from before the chain
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			path := fixture(t, tt.fixture)
			if _, err := VerifyChain(ctx, path); !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("v4 with a key: got %v, want ErrUnauthenticated", err)
			}
			rep, err := VerifyChainWith(ctx, path, VerifyOptions{Unkeyed: true})
			if err != nil || rep.StartSeq != tt.start || rep.Verified != tt.verified || rep.Unchained != tt.v2 {
				t.Fatalf("v4 unkeyed: %+v, %v", rep, err)
			}

			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fillMixed(t, s, 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if v := queryOne(t, path, "PRAGMA user_version"); v != int64(SchemaVersion) {
				t.Fatalf("schema version %v after Open", v)
			}
			fi, err := os.Stat(DefaultKeyFile(path))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("key file: %v %v", fi, err)
			}
			rep, err = VerifyChain(ctx, path)
			if err != nil || rep.StartSeq != tt.start || rep.Verified != tt.verified+5 || rep.Unchained != tt.v2 || rep.KeyID == "" {
				t.Fatalf("after the upgrade: %+v, %v", rep, err)
			}
			// A row without chain_seq written after the upgrade is not one
			// of those that predate the chain.
			forgedToolCall(t, path, "forged-late", "NULL")
			if _, err := VerifyChain(ctx, path); !errors.Is(err, auditchain.ErrBroken) {
				t.Fatalf("NULL row after the upgrade: %v", err)
			}
		})
	}
}

// The key belongs to its database: opening or verifying without it, or
// with another, fails and says so.
func TestSealedDatabaseNeedsItsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := writeMixed(t, 1)
	keyFile := DefaultKeyFile(path)
	other := filepath.Join(t.TempDir(), "other.key")
	if _, err := loadOrCreateKey(other, true); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyChainWith(ctx, path, VerifyOptions{KeyFile: other}); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("verify with another key: %v", err)
	}
	if _, err := Open(path, Options{KeyFile: other}); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("open with another key: %v", err)
	}
	moved := filepath.Join(t.TempDir(), "moved.key")
	if err := os.Rename(keyFile, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyChain(ctx, path); !errors.Is(err, ErrUnauthenticated) || !errors.Is(err, ErrKeyMissing) {
		t.Fatalf("verify without the key: %v", err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrKeyMissing) {
		t.Fatalf("open without the key: %v", err)
	}
	if _, err := os.Stat(keyFile); err == nil {
		t.Fatal("Open made a new key for a sealed database")
	}
	rep, err := VerifyChainWith(ctx, path, VerifyOptions{KeyFile: moved})
	if err != nil || rep.KeyID == "" {
		t.Fatalf("verify with the key moved elsewhere: %+v %v", rep, err)
	}
	rep, err = VerifyChainWith(ctx, path, VerifyOptions{Unkeyed: true})
	if err != nil || rep.KeyID != "" || rep.Verified != 5 {
		t.Fatalf("verify unkeyed: %+v %v", rep, err)
	}
}

// Tampering with the anchors themselves is found by verify, and a Store
// refuses to continue (and so re-seal) a chain whose head is not sealed.
func TestAnchorsResistTampering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name       string
		do         func(t *testing.T, path string)
		openRefuse bool
	}{
		{"seal deleted", func(t *testing.T, p string) { tamper(t, p, "DELETE FROM chain_seal") }, true},
		{"seal moved back with the newest record deleted", func(t *testing.T, p string) {
			tamper(t, p, "DELETE FROM events WHERE chain_seq = 10")
			tamper(t, p, "UPDATE chain_seal SET chain_seq = 9, hash = (SELECT hash FROM messages WHERE chain_seq = 9)")
		}, true},
		{"seal mac replaced by an older one", func(t *testing.T, p string) {
			tamper(t, p, "UPDATE chain_seal SET mac = ?", auditchain.Genesis("x").String())
		}, true},
		{"record appended with a correct hash", appendForged, true},
		{"checkpoint mac edited", func(t *testing.T, p string) {
			tamper(t, p, "UPDATE chain_checkpoints SET mac = NULL")
		}, false},
		{"bound of pre-chain rows raised", func(t *testing.T, p string) {
			tamper(t, p, "UPDATE audit_meta SET value = 'tool_calls=99,llm_calls=0,messages=0,events=0' WHERE key = ?", metaLegacy)
		}, false},
		{"key id edited", func(t *testing.T, p string) {
			tamper(t, p, "UPDATE audit_meta SET value = 'ffffffffffffffff' WHERE key = ?", metaKeyID)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, path := openStore(t, Options{})
			fillMixed(t, s, 2)
			if _, err := s.Prune(ctx, Retention{MaxAge: time.Nanosecond, Batch: 2}, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := VerifyChain(ctx, path); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			tt.do(t, path)
			if _, err := VerifyChain(ctx, path); !errors.Is(err, auditchain.ErrBroken) && !errors.Is(err, ErrKeyMismatch) {
				t.Fatalf("verify after tampering: %v", err)
			}
			s2, err := Open(path, Options{})
			if err == nil {
				s2.Close()
			}
			if tt.openRefuse && err == nil {
				t.Fatal("Open continued a tampered chain")
			}
		})
	}
}

// Retention deletes old records behind an authenticated checkpoint; the
// rest still verifies with the key, down to an empty chain.
func TestRetentionKeepsChainVerifiable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	fillMixed(t, s, 3)
	for _, batch := range []int{4, 100} {
		if _, err := s.Prune(ctx, Retention{MaxAge: time.Nanosecond, Batch: batch}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		rep, err := VerifyChain(ctx, path)
		if err != nil || rep.KeyID == "" || rep.HeadSeq != 15 {
			t.Fatalf("after pruning %d: %+v %v", batch, rep, err)
		}
	}
	fillMixed(t, s, 1) // the chain continues after an empty warm store
	rep, err := VerifyChain(ctx, path)
	if err != nil || rep.StartSeq != 15 || rep.Verified != 5 {
		t.Fatalf("after writing again: %+v %v", rep, err)
	}
}

// A database of schema v5 (testdata/v5.db, with its key, made by the
// evoclaw before agent_elapsed_ms) verifies as it is, read-only, with this
// build; it upgrades to v6 keeping every record verifiable, and the new
// column is covered by the hash of the rows that have a value, while no old
// row can gain one.
func TestMigrateV5AddsAgentElapsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := fixtureV5(t)
	rep, err := VerifyChain(ctx, path)
	if err != nil || rep.Verified != 15 || rep.KeyID == "" {
		t.Fatalf("v5 as it is: %+v, %v", rep, err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	withAgent := sampleCall(100)
	withAgent.Side, withAgent.ElapsedMs, withAgent.AgentElapsedMs = "orchestrator", 5012, new(int64)
	*withAgent.AgentElapsedMs = 7
	timedOut := sampleCall(101)
	timedOut.Side, timedOut.ElapsedMs, timedOut.Status, timedOut.ErrorType = "orchestrator", 5000, "error", "timeout"
	for _, c := range []persistence.ToolCall{withAgent, timedOut} {
		if err := s.RecordToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := queryOne(t, path, "PRAGMA user_version"); v != int64(len(migrations)) {
		t.Fatalf("schema version %v", v)
	}
	rep, err = VerifyChain(ctx, path)
	if err != nil || rep.Verified != 17 || rep.HeadSeq != 17 {
		t.Fatalf("after the upgrade: %+v, %v", rep, err)
	}
	if v := queryOne(t, path, "SELECT agent_elapsed_ms FROM tool_calls WHERE record_id = ?", withAgent.RecordID); v != int64(7) {
		t.Fatalf("agent_elapsed_ms %v", v)
	}
	for _, tc := range []struct{ name, set, undo string }{
		{"an old row gains a value", "UPDATE tool_calls SET agent_elapsed_ms = 1 WHERE chain_seq = 1", "UPDATE tool_calls SET agent_elapsed_ms = NULL WHERE chain_seq = 1"},
		{"a new row loses its value", "UPDATE tool_calls SET agent_elapsed_ms = NULL WHERE record_id = '" + withAgent.RecordID + "'",
			"UPDATE tool_calls SET agent_elapsed_ms = 7 WHERE record_id = '" + withAgent.RecordID + "'"},
		{"a new row's value edited", "UPDATE tool_calls SET agent_elapsed_ms = 8 WHERE record_id = '" + withAgent.RecordID + "'",
			"UPDATE tool_calls SET agent_elapsed_ms = 7 WHERE record_id = '" + withAgent.RecordID + "'"},
		{"a timeout gains a value", "UPDATE tool_calls SET agent_elapsed_ms = 0 WHERE record_id = '" + timedOut.RecordID + "'",
			"UPDATE tool_calls SET agent_elapsed_ms = NULL WHERE record_id = '" + timedOut.RecordID + "'"},
	} {
		tamper(t, path, tc.set)
		var be *auditchain.BreakError
		if _, err := VerifyChain(ctx, path); !errors.As(err, &be) || be.Kind != auditchain.BreakEdited {
			t.Fatalf("%s: %v", tc.name, err)
		}
		tamper(t, path, tc.undo)
	}
	if _, err := VerifyChain(ctx, path); err != nil {
		t.Fatalf("restored: %v", err)
	}
}

// An upgrade is all or nothing: when its last step fails, the database
// keeps the version and the tables it had, a file without a schema
// included, and the next open (with the step working) brings it up to
// date.
func TestMigrationIsAllOrNothing(t *testing.T) {
	last := len(migrations)
	for _, tc := range []struct {
		name    string
		path    func(t *testing.T) string
		version int64
		tables  int64
	}{
		// A new path gets the image (image.go, TestImageInstallCut); a
		// file without a schema (a first start cut after SQLite wrote its
		// header) gets the script, which is all or nothing too.
		{"file without schema", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "audit.db")
			createWithoutSchema(t, path)
			return path
		}, 0, 0},
		{"v4 database", func(t *testing.T) string { return fixture(t, "v4.db") }, 4, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path(t)
			before := int64(0)
			if tc.tables < 0 {
				before = queryOne(t, path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'").(int64)
			}
			orig := migrationHooks[last]
			migrationHooks[last] = func(context.Context, dbtx, auditchain.Key) error { return errors.New("step fails") }
			_, err := Open(path, Options{})
			if orig == nil {
				delete(migrationHooks, last)
			} else {
				migrationHooks[last] = orig
			}
			if err == nil || !strings.Contains(err.Error(), "step fails") {
				t.Fatalf("Open with a failing last step = %v", err)
			}
			if v := queryOne(t, path, "PRAGMA user_version"); v != tc.version {
				t.Fatalf("schema version after the failed upgrade %v, want %d", v, tc.version)
			}
			tables := queryOne(t, path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'").(int64)
			if want := max(tc.tables, before); tables != want {
				t.Fatalf("%d tables after the failed upgrade, want %d", tables, want)
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if v := queryOne(t, path, "PRAGMA user_version"); v != int64(last) {
				t.Fatalf("schema version %v, want %d", v, last)
			}
		})
	}
}
