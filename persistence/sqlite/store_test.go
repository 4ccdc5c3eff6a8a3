package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
)

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    Options
		wantErr string // substring; empty means Open succeeds
	}{
		{"zero value", Options{}, ""},
		{"full", Options{Sync: SyncFull}, ""},
		{"upper case", Options{Sync: "NORMAL"}, ""},
		{"unknown sync", Options{Sync: "fast"}, `sync "fast", allowed values are "normal" and "full"`},
		{"negative batch", Options{MaxBatch: -1}, "must not be negative"},
		{"negative queue", Options{QueueLen: -1}, "must not be negative"},
		{"negative busy timeout", Options{BusyTimeout: -time.Second}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "a.db")
			s, err := Open(path, tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want error")
			}
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Open: got %v, want ErrInvalidOptions mentioning %q", err, tt.wantErr)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("rejected options still created the file (stat: %v)", err)
			}
		})
	}
}

func TestOpenEmptyPath(t *testing.T) {
	t.Parallel()
	if _, err := Open("", Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open(\"\"): got %v, want ErrInvalidOptions", err)
	}
}

func TestOpenCreatesPrivateDirAndFile(t *testing.T) {
	t.Parallel()
	_, path := openStore(t, Options{})
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{filepath.Dir(path), 0o700 | os.ModeDir}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.want {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode(), c.want)
		}
	}
	if mode := queryOne(t, path, "PRAGMA journal_mode"); mode != "wal" {
		t.Errorf("journal_mode = %v, want wal", mode)
	}
}

func TestSyncModeApplied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sync string
		want int64 // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"", 1}, {SyncNormal, 1}, {SyncFull, 2}}
	for _, tt := range tests {
		s, _ := openStore(t, Options{Sync: tt.sync})
		var got int64
		if err := s.wc.conn.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("sync %q: PRAGMA synchronous = %d, want %d", tt.sync, got, tt.want)
		}
	}
}

// TestWriterCacheIsBounded: the writer's page cache is bounded below
// SQLite's default of 2,000 KiB, which a busy node fills and never gives
// back (docs/PERFORMANCE.md, "Scale"), on the connection the writes use.
// Creating the schema of a new database runs with a smaller cache still
// (createCacheKiB); the writer has exactly its own afterwards, whatever
// migrate had to do: create the schema, upgrade an old one, or nothing.
func TestWriterCacheIsBounded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		open func(t *testing.T) *Store
	}{
		{"fresh", func(t *testing.T) *Store { s, _ := openStore(t, Options{}); return s }},
		{"reopened", func(t *testing.T) *Store { s, path := openStore(t, Options{}); return reopen(t, s, path, Options{}) }},
		{"upgraded from v5", func(t *testing.T) *Store {
			s, err := Open(fixtureV5(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.open(t)
			var got int64
			if err := s.wc.conn.QueryRowContext(context.Background(), "PRAGMA cache_size").Scan(&got); err != nil {
				t.Fatal(err)
			}
			// A negative cache_size is in KiB, a positive one in pages.
			if got != -writerCacheKiB || writerCacheKiB >= 2000 || createCacheKiB >= writerCacheKiB {
				t.Errorf("PRAGMA cache_size = %d on the writer, want %d (KiB, under 2,000 and over the migration's %d)",
					got, -writerCacheKiB, createCacheKiB)
			}
		})
	}
}

func TestMigrateFromEmptyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second Open must find nothing to do
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if v := queryOne(t, path, "PRAGMA user_version"); v != int64(len(migrations)) {
		t.Fatalf("user_version = %v, want %d", v, len(migrations))
	}
	res, err := QueryReadOnly(context.Background(), path, "SELECT name FROM pragma_table_info('tool_calls') ORDER BY cid")
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, r := range res.Rows {
		cols = append(cols, r[0].(string))
	}
	want := []string{"id", "record_id", "ts", "ts_ms", "node", "side", "conversation_id", "request_id", "call_id",
		"agent_id", "tool", "params", "status", "error_type", "error", "exit_code", "elapsed_ms", "result_excerpt", "result_bytes",
		"chain_seq", "hash", "agent_elapsed_ms"}
	if !slices.Equal(cols, want) {
		t.Errorf("tool_calls columns:\n got %v\nwant %v", cols, want)
	}
	// v9 dropped the indexes only the whole-table reports used.
	for _, idx := range []string{"tool_calls_agent_tool", "llm_calls_model"} {
		if n := queryOne(t, path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = ?", idx); n != int64(0) {
			t.Errorf("index %s still there", idx)
		}
	}
	for _, idx := range []string{"tool_calls_ts_ms", "tool_calls_request_id", "tool_calls_conversation_id"} {
		if n := queryOne(t, path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = ?", idx); n != int64(1) {
			t.Errorf("index %s missing", idx)
		}
	}
	// v12 added report_bytes, held_bytes and the stub of a dropped report.
	if n := queryOne(t, path, "SELECT count(*) FROM pragma_table_info('request_log')"); n != int64(17) {
		t.Errorf("request_log has %v columns, want 17", n)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	s0, path := openStore(t, Options{})
	if err := s0.Close(); err != nil {
		t.Fatal(err)
	}
	// Another handle plays the newer evoclaw that bumped the version.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") {
		t.Fatalf("Open: got %v, want ErrSchemaTooNew naming version 99", err)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	exit := 3
	written := persistence.ToolCall{
		RecordID:       "0194a1b2c3d4e5f60718293a4b5c6d7e",
		Time:           time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.FixedZone("CET", 3600)),
		Node:           "orch-1",
		Side:           persistence.SideOrchestrator,
		ConversationID: "conv-9",
		RequestID:      "req-7",
		CallID:         "call_abc",
		AgentID:        "pi-kitchen",
		Tool:           "camera.snapshot",
		Params:         []byte(`{"res":"hd","flags":["a","b"]}`),
		Status:         persistence.StatusError,
		ErrorType:      "timeout",
		Error:          "no answer within 30s",
		ExitCode:       &exit,
		ElapsedMs:      30001,
		ResultExcerpt:  "partial ✓ output\nline 2",
		ResultBytes:    123456,
	}
	if err := s.RecordToolCall(context.Background(), written); err != nil {
		t.Fatalf("RecordToolCall: %v", err)
	}
	res, err := QueryReadOnly(context.Background(), path, `SELECT record_id, ts, ts_ms, node, side, conversation_id,
		request_id, call_id, agent_id, tool, params, status, error_type, error, exit_code, elapsed_ms,
		result_excerpt, result_bytes FROM tool_calls WHERE record_id = ?`, written.RecordID)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(res.Rows))
	}
	got := make(map[string]any)
	for i, c := range res.Columns {
		got[c] = res.Rows[0][i]
	}
	ts, err := time.Parse(time.RFC3339Nano, got["ts"].(string))
	if err != nil {
		t.Fatalf("ts %q is not RFC 3339: %v", got["ts"], err)
	}
	if !ts.Equal(written.Time) || ts.Location() != time.UTC {
		t.Errorf("ts = %v, want %v in UTC", ts, written.Time)
	}
	want := map[string]any{
		"record_id": written.RecordID, "ts_ms": written.Time.UnixMilli(), "node": written.Node,
		"side": written.Side, "conversation_id": written.ConversationID, "request_id": written.RequestID,
		"call_id": written.CallID, "agent_id": written.AgentID, "tool": written.Tool,
		"params": string(written.Params), "status": written.Status, "error_type": written.ErrorType,
		"error": written.Error, "exit_code": int64(exit), "elapsed_ms": written.ElapsedMs,
		"result_excerpt": written.ResultExcerpt, "result_bytes": written.ResultBytes,
	}
	for col, w := range want {
		if got[col] != w {
			t.Errorf("%s = %#v, want %#v", col, got[col], w)
		}
	}
	// The params column holds JSON that SQLite can query.
	if v := queryOne(t, path, "SELECT params ->> '$.flags[1]' FROM tool_calls"); v != "b" {
		t.Errorf("params ->> '$.flags[1]' = %v, want b", v)
	}
}

func TestRecordNulls(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	zero := 0
	tests := []struct {
		name     string
		call     persistence.ToolCall
		wantNull []string // columns that must be NULL
		wantSet  []string // columns that must not be NULL
	}{
		{
			name: "minimal",
			call: persistence.ToolCall{Node: "n", Side: persistence.SideEdge, Tool: "t", Status: persistence.StatusSuccess},
			wantNull: []string{"conversation_id", "request_id", "call_id", "agent_id", "params", "error_type",
				"error", "exit_code", "result_excerpt"},
		},
		{
			name:     "exit code zero and empty JSON object are values",
			call:     persistence.ToolCall{Node: "n", Side: persistence.SideEdge, Tool: "t", Status: persistence.StatusSuccess, ExitCode: &zero, Params: []byte(`{}`)},
			wantNull: []string{"error_type", "error"},
			wantSet:  []string{"exit_code", "params"},
		},
		{
			name:     "JSON null params is a value",
			call:     persistence.ToolCall{Node: "n", Side: persistence.SideEdge, Tool: "t", Status: persistence.StatusSuccess, Params: []byte(`null`)},
			wantNull: []string{"exit_code"},
			wantSet:  []string{"params"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call.RecordID = persistence.NewRecordID()
			if err := s.RecordToolCall(context.Background(), tt.call); err != nil {
				t.Fatalf("RecordToolCall: %v", err)
			}
			for _, col := range tt.wantNull {
				if v := queryOne(t, path, "SELECT "+col+" IS NULL FROM tool_calls WHERE record_id = ?", tt.call.RecordID); v != int64(1) {
					t.Errorf("%s is not NULL", col)
				}
			}
			for _, col := range tt.wantSet {
				if v := queryOne(t, path, "SELECT "+col+" IS NULL FROM tool_calls WHERE record_id = ?", tt.call.RecordID); v != int64(0) {
					t.Errorf("%s is NULL", col)
				}
			}
		})
	}
}

func TestRecordFillsDefaults(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	before := time.Now()
	long := strings.Repeat("é", persistence.MaxExcerptBytes) // 2 bytes per rune
	c := persistence.ToolCall{Node: "n", Side: persistence.SideEdge, Tool: "t", Status: persistence.StatusSuccess, ResultExcerpt: long}
	if err := s.RecordToolCall(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	res, err := QueryReadOnly(context.Background(), path, "SELECT record_id, ts_ms, result_excerpt FROM tool_calls")
	if err != nil {
		t.Fatal(err)
	}
	id, ms, excerpt := res.Rows[0][0].(string), res.Rows[0][1].(int64), res.Rows[0][2].(string)
	if len(id) != persistence.RecordIDLen {
		t.Errorf("generated record_id %q has length %d", id, len(id))
	}
	if ms < before.UnixMilli() || ms > time.Now().UnixMilli() {
		t.Errorf("ts_ms %d is not the time of the call", ms)
	}
	if len(excerpt) != persistence.MaxExcerptBytes || !strings.HasPrefix(long, excerpt) {
		t.Errorf("result_excerpt is %d bytes, want a %d-byte prefix", len(excerpt), persistence.MaxExcerptBytes)
	}
}

func TestRecordRejectsInvalid(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	c := sampleCall(1)
	c.Side = "cloud"
	if err := s.RecordToolCall(context.Background(), c); !errors.Is(err, persistence.ErrInvalidToolCall) {
		t.Fatalf("RecordToolCall: got %v, want ErrInvalidToolCall", err)
	}
	if n := countRows(t, path); n != 0 {
		t.Fatalf("%d rows written, want 0", n)
	}
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	const writers, each = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.RecordToolCall(context.Background(), sampleCall(w*each+i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := countRows(t, path); n != writers*each {
		t.Fatalf("count(*) = %d, want %d", n, writers*each)
	}
	if n := queryOne(t, path, "SELECT count(DISTINCT request_id) FROM tool_calls"); n != int64(writers*each) {
		t.Fatalf("distinct request ids = %v, want %d", n, writers*each)
	}
}

func TestClosedStore(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := s.Close(); err != nil {
				t.Errorf("concurrent Close: %v", err)
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	calls := map[string]func() error{
		"RecordToolCall": func() error { return s.RecordToolCall(ctx, sampleCall(1)) },
		"BeginRequest":   func() error { _, _, err := s.BeginRequest(ctx, "r"); return err },
		"FinishRequest":  func() error { return s.FinishRequest(ctx, "r", nil) },
		"PruneRequests":  func() error { _, err := s.PruneRequests(ctx, time.Now()); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
		}
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.RecordToolCall(ctx, sampleCall(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("RecordToolCall with canceled ctx: got %v", err)
	}
	if n := countRows(t, path); n != 0 {
		t.Fatalf("a call with a canceled context was written (%d rows)", n)
	}
}

// TestCloseLeavesNoGoroutines checks that Close stops everything Open
// started. Not parallel: it counts the goroutines of the whole process.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordToolCall(context.Background(), sampleCall(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return runtime.NumGoroutine() <= before }, "goroutines to exit")
}
