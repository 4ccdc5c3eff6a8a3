package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestReadOnlyFSNamed: a write that fails on a file system mounted
// read-only is marked ErrReadOnlyFS, in its error and in WriteHealth,
// whether the system said EROFS or SQLite said only that it could not
// write; the same failure on a writable file system, and a full disk, are
// not. Before, the node's /readyz and the agent's refusals said "disk I/O
// error (778)" and nothing of the cause. Not parallel: it sets the seams.
func TestReadOnlyFSNamed(t *testing.T) {
	sqliteRO := readOnlyDatabaseError(t)
	for _, tc := range []struct {
		name       string
		fail       error
		mountedRO  bool
		wantRO     bool
		wantFull   bool
		wantInText string
	}{
		{"EROFS from the system", &os_SyscallError{"pwrite", syscall.EROFS}, false, true, false, "read-only file system"},
		{"SQLite's error on a read-only mount", sqliteRO, true, true, false, "readonly database"},
		{"SQLite's error on a writable mount", sqliteRO, false, false, false, "readonly database"},
		{"a full disk", &os_SyscallError{"fsync", syscall.ENOSPC}, true, false, true, "no space left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := fsReadOnly
			fsReadOnly = func(string) bool { return tc.mountedRO }
			t.Cleanup(func() { fsReadOnly = saved })
			s, _ := openStoreWithCommit(t, Options{}, func(func() error, int) error { return tc.fail })
			err := s.RecordToolCall(context.Background(), sampleCall(1))
			if err == nil {
				t.Fatal("the write succeeded, want its failure")
			}
			h := s.WriteHealth()
			if errors.Is(err, ErrReadOnlyFS) != tc.wantRO || h.ReadOnlyFS != tc.wantRO || h.DiskFull != tc.wantFull || !h.Failing() {
				t.Fatalf("error %q, health %+v: want read-only %v, disk full %v, failing", err, h, tc.wantRO, tc.wantFull)
			}
			if !strings.Contains(err.Error(), tc.wantInText) || strings.Contains(h.LastError, "file system is read-only") != tc.wantRO {
				t.Fatalf("error %q (health says %q): want it to keep %q and to say the file system is read-only: %v", err, h.LastError, tc.wantInText, tc.wantRO)
			}
			if !Unavailable(err) {
				t.Fatalf("Unavailable(%q) = false", err)
			}
		})
	}
}

// readOnlyDatabaseError is a real SQLite error of a write the database
// refuses (SQLITE_READONLY), from a connection opened read-only.
func readOnlyDatabaseError(t *testing.T) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ro.db")
	rw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.Exec("INSERT INTO t VALUES (1)")
	if err == nil || !storeFault(err) {
		t.Fatalf("a write on a read-only connection: %v, want SQLITE_READONLY", err)
	}
	return err
}

// TestCardTurnsReadOnlyUnderStore makes a real ext4 file system go
// read-only under an open store, as the kernel does to a Pi's card after
// write errors (errors=remount-ro): the next write fails naming the
// read-only file system (SQLite itself said "disk I/O error"), and once
// the file system is checked and mounted again the acknowledged record is
// there. It needs root and loop devices (testenv.NewCard), and skips
// loudly without them; TestReadOnlyFSNamed covers the classification
// without.
func TestCardTurnsReadOnlyUnderStore(t *testing.T) {
	card := testenv.NewCard(t)
	path := filepath.Join(card.Dir, "data", "audit.db")
	s, err := Open(path, Options{Sync: SyncFull})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acked := sampleCall(1)
	if err := s.RecordToolCall(ctx, acked); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if s.StillReadOnly() {
		s.Close()
		t.Fatal("StillReadOnly on a healthy card")
	}
	card.TurnReadOnly()
	err = s.RecordToolCall(ctx, sampleCall(2))
	h, still := s.WriteHealth(), s.StillReadOnly()
	s.Close() // its last writes fail too
	if err == nil || !strings.Contains(err.Error(), "file system is read-only") || !strings.Contains(h.LastError, "file system is read-only") {
		t.Fatalf("a write after the card turned read-only: %v (health says %q), want it to say the file system is read-only", err, h.LastError)
	}
	if !still {
		t.Fatal("StillReadOnly = false after a write failed on the read-only card")
	}
	t.Logf("the write's error: %v", err)

	card.Repair() // as after a reboot
	if n := queryOne(t, path, "SELECT count(*) FROM tool_calls WHERE record_id = ?", acked.RecordID); n != int64(1) {
		t.Fatalf("the acknowledged record: %v rows after the card was repaired, want 1", n)
	}
}
