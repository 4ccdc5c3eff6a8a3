package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// openStore opens a Store in a fresh directory and closes it at cleanup.
func openStore(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit", "audit.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// openStoreWithCommit is openStore with the commit seam replaced by commit.
// The seam is a package variable read by Open, so callers must not run in
// parallel with other tests.
func openStoreWithCommit(t testing.TB, opts Options, commit commitFunc) (*Store, string) {
	t.Helper()
	saved := commitHook
	commitHook = commit
	defer func() { commitHook = saved }()
	return openStore(t, opts)
}

// openFullDiskStore is openStore whose commits fail as an fsync on a full
// disk does (ENOSPC) while full is set; full starts set. As
// openStoreWithCommit, callers must not run in parallel.
func openFullDiskStore(t testing.TB) (s *Store, path string, full *atomic.Bool) {
	t.Helper()
	full = new(atomic.Bool)
	full.Store(true)
	s, path = openStoreWithCommit(t, Options{}, func(commit func() error, _ int) error {
		if full.Load() {
			return &os_SyscallError{"fsync", syscall.ENOSPC}
		}
		return commit()
	})
	return s, path, full
}

// os_SyscallError mimics how the os package reports a failed system call.
type os_SyscallError struct {
	call string
	err  error
}

func (e *os_SyscallError) Error() string { return e.call + ": " + e.err.Error() }
func (e *os_SyscallError) Unwrap() error { return e.err }

// reopen closes s, as a restart of its process would, and opens path
// again with opts; the new Store is closed at cleanup.
func reopen(t testing.TB, s *Store, path string, opts Options) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s, err := Open(path, opts)
	// A child process another test forks holds a copy of the flock from
	// its fork to its exec: a moment, but enough to fail an immediate
	// reopen now and then.
	for deadline := time.Now().Add(5 * time.Second); errors.Is(err, ErrInUse) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		s, err = Open(path, opts)
	}
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// queued reports how many writes wait in s's queue.
func queued(s *Store) int {
	s.wq.mu.Lock()
	defer s.wq.mu.Unlock()
	return len(s.wq.pending)
}

// sampleCall returns a valid edge tool call numbered i.
func sampleCall(i int) persistence.ToolCall {
	return persistence.ToolCall{
		RecordID:  persistence.NewRecordID(),
		Time:      time.Now(),
		Node:      "edge-1",
		Side:      persistence.SideEdge,
		RequestID: fmt.Sprintf("req-%d", i),
		AgentID:   "edge-1",
		Tool:      "shell",
		Params:    []byte(fmt.Sprintf(`{"n":%d}`, i)),
		Status:    persistence.StatusSuccess,
		ElapsedMs: int64(i),
	}
}

// queryOne runs q read-only and returns the single value it yields.
func queryOne(t testing.TB, path, q string, args ...any) any {
	t.Helper()
	res, err := QueryReadOnly(context.Background(), path, q, args...)
	if err != nil {
		t.Fatalf("QueryReadOnly(%q): %v", q, err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		t.Fatalf("QueryReadOnly(%q): got %d rows, want one value", q, len(res.Rows))
	}
	return res.Rows[0][0]
}

// countRows returns SELECT count(*) FROM tool_calls.
func countRows(t testing.TB, path string) int64 {
	t.Helper()
	n, ok := queryOne(t, path, "SELECT count(*) FROM tool_calls").(int64)
	if !ok {
		t.Fatal("count(*) is not an integer")
	}
	return n
}

// queryPlan is the detail column of EXPLAIN QUERY PLAN stmt, step by step.
func queryPlan(t *testing.T, db *sql.DB, stmt string, args ...any) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
