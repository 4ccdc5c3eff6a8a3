package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeStatements are statements QueryReadOnly must refuse. %s in a
// statement is replaced by a path in the database's directory that must not
// come into existence.
var writeStatements = []struct {
	name string
	sql  string
}{
	{"insert", `INSERT INTO tool_calls (record_id, ts, ts_ms, node, side, tool, status, elapsed_ms, result_bytes)
		VALUES ('x', '2025-01-01T00:00:00Z', 0, 'n', 'edge', 't', 'success', 0, 0)`},
	{"insert returning", `INSERT INTO request_log (request_id, state, started_ms) VALUES ('r', 'running', 0) RETURNING request_id`},
	{"replace", `REPLACE INTO request_log (request_id, state, started_ms) VALUES ('r', 'done', 1)`},
	{"update", `UPDATE tool_calls SET tool = 'forged'`},
	{"delete", `DELETE FROM tool_calls`},
	{"cte delete", `WITH old AS (SELECT id FROM tool_calls) DELETE FROM tool_calls WHERE id IN old`},
	{"create table", `CREATE TABLE evil (x)`},
	{"create temp table", `CREATE TEMP TABLE evil (x)`},
	{"create index", `CREATE INDEX evil ON tool_calls (tool)`},
	{"create view", `CREATE VIEW evil AS SELECT 1`},
	{"drop table", `DROP TABLE request_log`},
	{"drop index", `DROP INDEX tool_calls_ts_ms`},
	{"alter table", `ALTER TABLE tool_calls ADD COLUMN evil TEXT`},
	{"reindex", `REINDEX`},
	{"analyze", `ANALYZE`},
	{"vacuum", `VACUUM`},
	{"vacuum into", `VACUUM INTO '%s'`},
	{"attach", `ATTACH '%s' AS other`},
	{"attach uri", `ATTACH 'file:%s?mode=rwc' AS other`},
	{"pragma user_version", `PRAGMA user_version = 5`},
	{"pragma application_id", `PRAGMA application_id = 5`},
	{"pragma journal_mode", `PRAGMA journal_mode = DELETE`},
	{"pragma journal_mode memory", `PRAGMA journal_mode=MEMORY`},
	{"pragma journal_mode off", `PRAGMA main.journal_mode(OFF)`},
	{"pragma journal_mode quoted", `/* c */ PRAGMA "main"."journal_mode" = 'delete'`},
	{"explain pragma journal_mode", `EXPLAIN PRAGMA journal_mode = DELETE`},
	{"pragma wal_checkpoint truncate", `PRAGMA wal_checkpoint(TRUNCATE)`},
	{"pragma wal_checkpoint", `PRAGMA wal_checkpoint`},
	{"pragma wal_checkpoint bracketed", `pragma [WAL_CHECKPOINT];`},
	{"pragma optimize", `PRAGMA optimize`},
	{"pragma incremental_vacuum", `PRAGMA incremental_vacuum(10)`},
	{"pragma temp_store_directory", `PRAGMA temp_store_directory = '%s'`},
	{"pragma hard_heap_limit", `PRAGMA hard_heap_limit = 1`},
	{"pragma locking_mode", `PRAGMA locking_mode = EXCLUSIVE`},
	{"pragma writable_schema", `PRAGMA writable_schema = ON`},
	{"pragma query_only", `PRAGMA query_only = 0`},
}

// snapshot is what must not change when a write is refused.
type snapshot struct {
	sum   [32]byte // of the database file
	rows  int64    // in tool_calls
	files []string // in the database's directory, besides -wal and -shm
	wal   int64    // size of the -wal file (0 when missing)
}

func takeSnapshot(t *testing.T, path string) snapshot {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{sum: sha256.Sum256(b), rows: countRows(t, path)}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case filepath.Base(path) + "-wal":
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			s.wal = fi.Size()
		case filepath.Base(path) + "-shm":
		default:
			s.files = append(s.files, e.Name())
		}
	}
	return s
}

func (s snapshot) equal(o snapshot) bool {
	return s.sum == o.sum && s.rows == o.rows && s.wal == o.wal && slices.Equal(s.files, o.files)
}

// auditDB returns a closed audit database holding n records.
func auditDB(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := s.RecordToolCall(context.Background(), sampleCall(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestQueryReadOnlyRefusesWrites(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 3)
	target := filepath.Join(filepath.Dir(path), "other.db")
	before := takeSnapshot(t, path)
	if before.rows != 3 {
		t.Fatalf("setup: %d rows", before.rows)
	}
	for _, tt := range writeStatements {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.sql
			if strings.Contains(q, "%s") {
				q = fmt.Sprintf(q, target)
			}
			res, err := QueryReadOnly(context.Background(), path, q)
			if err == nil {
				t.Fatalf("write was accepted, result %v", res)
			}
			if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "audit database is read-only") {
				t.Fatalf("got %v, want an error saying the audit database is read-only", err)
			}
			if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s was created (stat: %v)", target, err)
			}
			if after := takeSnapshot(t, path); !after.equal(before) {
				t.Fatalf("database changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

func TestQueryReadOnlyRefusesWritesWhileStoreOpen(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	for i := range 3 {
		if err := s.RecordToolCall(context.Background(), sampleCall(i)); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(filepath.Dir(path), "other.db")
	for _, tt := range writeStatements {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.sql
			if strings.Contains(q, "%s") {
				q = fmt.Sprintf(q, target)
			}
			if _, err := QueryReadOnly(context.Background(), path, q); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("got %v, want ErrReadOnly", err)
			}
			if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s was created", target)
			}
			if n := countRows(t, path); n != 3 {
				t.Fatalf("tool_calls has %d rows, want 3", n)
			}
		})
	}
	// The store still writes after all that.
	if err := s.RecordToolCall(context.Background(), sampleCall(9)); err != nil {
		t.Fatal(err)
	}
}

// TestCheckPragma: a pragma that sets something or acts is refused as
// read-only before SQLite sees it; one that reads (with or without the
// name of what to read) is not, and neither is anything else.
func TestCheckPragma(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sql     string
		refused bool
	}{
		{"PRAGMA journal_mode", false},
		{"pragma main.journal_mode;", false},
		{"PRAGMA user_version", false},
		{"PRAGMA integrity_check", false},
		{"PRAGMA quick_check(5)", false},
		{"PRAGMA table_info(tool_calls)", false},
		{"PRAGMA main.index_list = 'tool_calls'", false},
		{"PRAGMA foreign_key_check", false},
		{"EXPLAIN QUERY PLAN SELECT * FROM tool_calls", false},
		{"SELECT * FROM pragma_table_info('tool_calls')", false},
		{"SELECT 'PRAGMA journal_mode = DELETE'", false},
		{"-- PRAGMA wal_checkpoint\nSELECT 1", false},
		{"PRAGMA journal_mode = DELETE", true},
		{"PRAGMA journal_mode=MEMORY", true},
		{"PRAGMA journal_mode = OFF", true},
		{"PRAGMA journal_mode('wal')", true},
		{"PRAGMA main . journal_mode ( 'delete' )", true},
		{"PRAGMA \"journal_mode\" = delete", true},
		{"PRAGMA `Journal_Mode` = delete", true},
		{"PRAGMA 'journal_mode' = delete", true},
		{"PRAGMA [main].[journal_mode] = delete", true},
		{"/* x */ PRAGMA -- y\n journal_mode = delete", true},
		{"EXPLAIN PRAGMA journal_mode = delete", true},
		{"EXPLAIN QUERY PLAN PRAGMA temp_store_directory = '/tmp'", true},
		{"PRAGMA wal_checkpoint", true},
		{"PRAGMA wal_checkpoint(TRUNCATE)", true},
		{"PRAGMA main.wal_checkpoint(PASSIVE)", true},
		{"PRAGMA optimize", true},
		{"PRAGMA optimize(0x10002)", true},
		{"PRAGMA incremental_vacuum", true},
		{"PRAGMA temp_store_directory = '/tmp'", true},
		{"PRAGMA data_store_directory = '/tmp'", true},
		{"PRAGMA hard_heap_limit = 1", true},
		{"PRAGMA soft_heap_limit = 1", true},
		{"PRAGMA cache_size = 10", true},
		{"PRAGMA user_version = 5", true},
		{"PRAGMA query_only = 0", true},
		{"PRAGMA writable_schema = 1", true},
		{"PRAGMA locking_mode = EXCLUSIVE", true},
		{"PRAGMA wal_autocheckpoint = 1", true},
		{"PRAGMA journal_size_limit = 0", true},
	}
	for _, tt := range tests {
		err := CheckPragma(tt.sql)
		switch {
		case tt.refused && !errors.Is(err, ErrReadOnly):
			t.Errorf("CheckPragma(%q): got %v, want ErrReadOnly", tt.sql, err)
		case !tt.refused && err != nil:
			t.Errorf("CheckPragma(%q): got %v, want nil", tt.sql, err)
		}
	}
}

// TestQueryReadOnlyPragmasWhileStoreOpen runs the pragmas a prober found
// answered as busy or as an I/O error (so 503 over HTTP) while a node
// writes the file: each is refused as read-only, at once, and the pragmas
// that read still work.
func TestQueryReadOnlyPragmasWhileStoreOpen(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	if err := s.RecordToolCall(context.Background(), sampleCall(1)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"PRAGMA journal_mode=DELETE", "PRAGMA journal_mode=MEMORY", "PRAGMA journal_mode=OFF",
		"PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint", "PRAGMA temp_store_directory = '.'",
	} {
		start := time.Now()
		_, err := QueryReadOnly(context.Background(), path, q)
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "audit database is read-only") {
			t.Errorf("%s: got %v, want the audit database is read-only", q, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: refused after %v", q, d)
		}
	}
	for q, want := range map[string]any{"PRAGMA journal_mode": "wal", "PRAGMA quick_check(1)": "ok"} {
		res, err := QueryReadOnly(context.Background(), path, q)
		if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != want {
			t.Errorf("%s: got %v, %v; want %v", q, res, err, want)
		}
	}
	if err := s.RecordToolCall(context.Background(), sampleCall(2)); err != nil {
		t.Fatal(err)
	}
}

func TestQueryReadOnlyMissingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing.db"), filepath.Join(dir, "no-dir", "missing.db")} {
		_, err := QueryReadOnly(context.Background(), path, "SELECT 1")
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.db") {
			t.Errorf("QueryReadOnly(%s): got %v, want a not-exist error naming the file", path, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("QueryReadOnly created %s", path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no-dir")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("QueryReadOnly created a directory")
	}
}

func TestQueryReadOnlyOneStatement(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 1)
	before := takeSnapshot(t, path)
	tests := []struct {
		sql  string
		want error // nil means accepted
	}{
		{"SELECT 1", nil},
		{"SELECT 1;", nil},
		{"  SELECT ';' ; -- trailing comment", nil},
		{"/* a; b */ SELECT 1 /* ; */", nil},
		{"SELECT 1; SELECT 2", ErrNotOneStatement},
		{"SELECT 1; DELETE FROM tool_calls", ErrNotOneStatement},
		{"", ErrNotOneStatement},
		{" ; -- nothing", ErrNotOneStatement},
	}
	for _, tt := range tests {
		_, err := QueryReadOnly(context.Background(), path, tt.sql)
		if (tt.want == nil && err != nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("QueryReadOnly(%q): got %v, want %v", tt.sql, err, tt.want)
		}
	}
	if after := takeSnapshot(t, path); !after.equal(before) {
		t.Fatal("database changed")
	}
}

func TestQueryReadOnlyRowCap(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 0)
	const series = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT ?) SELECT x FROM n"
	res, err := QueryReadOnly(context.Background(), path, series, MaxQueryRows)
	if err != nil {
		t.Fatalf("%d rows: %v", MaxQueryRows, err)
	}
	if len(res.Rows) != MaxQueryRows || res.Rows[MaxQueryRows-1][0] != int64(MaxQueryRows) {
		t.Fatalf("got %d rows, want %d", len(res.Rows), MaxQueryRows)
	}
	_, err = QueryReadOnly(context.Background(), path, series, MaxQueryRows+1)
	if !errors.Is(err, ErrTooManyRows) || !strings.Contains(err.Error(), "more than 100000 rows") {
		t.Fatalf("%d rows: got %v, want ErrTooManyRows saying more than 100000 rows", MaxQueryRows+1, err)
	}
}

func TestQueryReadOnlyValues(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 0)
	res, err := QueryReadOnly(context.Background(), path,
		"SELECT NULL AS n, 42 AS i, 1.5 AS f, 'text' AS s, x'00ff' AS b, ? AS arg", "bound")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"n", "i", "f", "s", "b", "arg"}; !slices.Equal(res.Columns, want) {
		t.Fatalf("columns %v, want %v", res.Columns, want)
	}
	row := res.Rows[0]
	if row[0] != nil || row[1] != int64(42) || row[2] != 1.5 || row[3] != "text" || row[5] != "bound" {
		t.Fatalf("row %#v", row)
	}
	if b, ok := row[4].([]byte); !ok || !bytes.Equal(b, []byte{0, 0xff}) {
		t.Fatalf("blob %#v", row[4])
	}
}

func TestQueryReadOnlySyntaxError(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 0)
	_, err := QueryReadOnly(context.Background(), path, "SELEC 1")
	if err == nil || errors.Is(err, ErrReadOnly) {
		t.Fatalf("got %v, want a syntax error that is not ErrReadOnly", err)
	}
}

func TestQueryWhileWriting(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	const total = 300
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range total / 3 {
				if err := s.RecordToolCall(context.Background(), sampleCall(w*1000+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// Readers see a growing, never partial count while the writer commits.
	var last int64
	for last < total {
		n := countRows(t, path)
		if n < last {
			t.Fatalf("count went down from %d to %d", last, n)
		}
		last = n
		if t.Failed() {
			break
		}
	}
	wg.Wait()
}
