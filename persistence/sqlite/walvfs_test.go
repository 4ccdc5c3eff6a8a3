//go:build linux

package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// writeSyscalls returns how many write system calls (write, pwrite, ...)
// this process has made, from /proc/self/io.
func writeSyscalls(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("SKIP: no /proc/self/io: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "syscw: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("SKIP: /proc/self/io has no syscw")
	return 0
}

// TestCommitIsOneWrite: a lone writer's commit touches several pages (the
// record, its indexes, the summary, the seal), and each reaches the log in
// the same single write. SQLite alone makes two writes per page.
func TestCommitIsOneWrite(t *testing.T) {
	for _, sync := range []string{SyncNormal, SyncFull} {
		t.Run(sync, func(t *testing.T) {
			s, _ := openStore(t, Options{Sync: sync})
			ctx := context.Background()
			if err := s.RecordToolCall(ctx, sampleCall(0)); err != nil {
				t.Fatal(err)
			}
			const commits = 30 // fewer than checkpointEvery: no checkpoint writes meanwhile
			before, frames := writeSyscalls(t), walWrites.Load()
			for i := 1; i <= commits; i++ {
				if err := s.RecordToolCall(ctx, sampleCall(i)); err != nil {
					t.Fatal(err)
				}
			}
			writes, gathered := writeSyscalls(t)-before, walWrites.Load()-frames
			if gathered < commits {
				t.Fatalf("%d commits made %d writes to the log through the VFS, want one each at least: is the writer's VFS in use?", commits, gathered)
			}
			if writes > commits+commits/2 {
				t.Errorf("%d commits made %d write system calls, want about one each", commits, writes)
			}
			t.Logf("%d commits: %d write system calls", commits, writes)
		})
	}
}

// TestWALVFSBigTransactions drives the paths of the log's writes that a
// tool call's commit does not take: a transaction larger than the page
// cache, whose pages are written to the log before it commits (and read
// back, and written again in place, and their frames' checksums
// rewritten), and transactions larger than the buffer. A reader on
// SQLite's plain VFS, in another connection, checks every committed state
// as it goes, and the database is intact afterwards.
func TestWALVFSBigTransactions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.db")
	if err := createFile(path); err != nil {
		t.Fatal(err)
	}
	opts, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := writerDSN(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dsn, "vfs="+walVFSName) {
		t.Fatalf("writer DSN %q does not name the VFS %s", dsn, walVFSName)
	}
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := w.ExecContext(ctx, `PRAGMA cache_size = 8; CREATE TABLE t (id INTEGER PRIMARY KEY, g INTEGER NOT NULL, v TEXT NOT NULL);
		CREATE INDEX t_v ON t(v)`); err != nil {
		t.Fatal(err)
	}
	rdsn, err := readOnlyDSN(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sql.Open("sqlite", rdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	const rows = 400 // per transaction: hundreds of pages, far more than the cache holds
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var readErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Each committed transaction adds rows of one group g and
			// then rewrites them all: the reader sees whole ones only.
			var n, groups, bad int64
			err := r.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT g), coalesce(sum(v NOT LIKE 'done %'), 0) FROM t`).Scan(&n, &groups, &bad)
			if err != nil {
				readErr = err
				return
			}
			if n != groups*rows || bad != 0 {
				readErr = fmt.Errorf("reader saw %d rows in %d groups, %d not rewritten: a transaction only in part", n, groups, bad)
				return
			}
		}
	})
	for g := range 6 {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if _, err := tx.ExecContext(ctx, `INSERT INTO t (g, v) VALUES (?, ?)`, g, fmt.Sprintf("%05d %s", (i*7919)%rows, strings.Repeat("x", 300))); err != nil {
				t.Fatal(err)
			}
		}
		// Scattered index keys: pages just written to the log are read back
		// soon after. Then dirty again the pages already written.
		if _, err := tx.ExecContext(ctx, `UPDATE t SET v = 'done ' || v WHERE g = ?`, g); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	// The files as a crash of the writer would leave them now hold every
	// commit: recovery rebuilds the wal-index of a copy (no -shm) from the
	// frames' headers and checksums, and keeps only what they show
	// committed.
	copied := filepath.Join(t.TempDir(), "copy.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copied+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := sql.Open("sqlite", copied)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recovered int64
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE v LIKE 'done %'`).Scan(&recovered); err != nil || recovered != 6*rows {
		t.Fatalf("recovered from the files: %d rewritten rows, %v; want %d", recovered, err, 6*rows)
	}
	// The writer empties the log and truncates it, then writes again.
	var busy, logFrames, done int64
	if err := w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil || busy != 0 {
		t.Fatalf("truncating checkpoint: busy %d, %v", busy, err)
	}
	if st, err := os.Stat(path + "-wal"); err != nil || st.Size() != 0 {
		t.Fatalf("log after a truncating checkpoint: %v, %v; want it empty", st, err)
	}
	if _, err := w.ExecContext(ctx, `INSERT INTO t (g, v) SELECT 6, 'done ' || v FROM t WHERE g = 0`); err != nil {
		t.Fatal(err)
	}
	// The log as the plain VFS reads it: every page intact.
	var check string
	if err := r.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	var n int64
	if err := r.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE v LIKE 'done %'`).Scan(&n); err != nil || n != 7*rows {
		t.Fatalf("%d rewritten rows, %v; want %d", n, err, 7*rows)
	}
}
