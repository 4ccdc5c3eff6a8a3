package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// WriteHealth says whether the store's writes reach the disk, from what the
// writer saw; reading it writes nothing.
type WriteHealth struct {
	// LastOK is when a transaction last committed; zero when none did
	// since Open.
	LastOK time.Time
	// LastFailure is when a write last failed for a reason of the store
	// itself (disk full, I/O error, a failed BEGIN or COMMIT); zero when
	// none did. A write refused for its own content (a constraint) is not
	// counted.
	LastFailure time.Time
	// LastError describes that failure.
	LastError string
	// DiskFull is set when that failure was ErrDiskFull.
	DiskFull bool
	// ReadOnlyFS is set when that failure was ErrReadOnlyFS: no write
	// succeeds until the file system is repaired and mounted read-write.
	ReadOnlyFS bool
}

// ErrReadOnlyFS reports a write that failed because the file system
// holding the database is mounted read-only. The kernel remounts a card so
// after write errors (ext4's errors=remount-ro), and SQLite then says only
// "disk I/O error" or "attempt to write a readonly database".
var ErrReadOnlyFS = errors.New("the audit database's file system is read-only, as the kernel makes a card after write errors (see dmesg); " +
	"no write succeeds until it is checked (fsck) and mounted read-write again")

// Failing reports whether the latest outcome was a failure of the store.
func (h WriteHealth) Failing() bool { return h.LastFailure.After(h.LastOK) }

// writeHealth is a Store's WriteHealth, updated by the committer.
type writeHealth struct {
	mu sync.Mutex // guards h
	h  WriteHealth
}

// WriteHealth returns what the writer last saw.
func (s *Store) WriteHealth() WriteHealth {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.h
}

// noteWrite records the outcome of one transaction for WriteHealth. whole
// is set when err is the BEGIN or COMMIT error rather than one write's.
func (s *Store) noteWrite(err error, whole bool) {
	if err != nil && !whole && !storeFault(err) {
		return // the write was wrong, not the store
	}
	now := time.Now()
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if err == nil {
		s.health.h.LastOK = now
		return
	}
	s.health.h.LastFailure, s.health.h.LastError = now, err.Error()
	s.health.h.DiskFull = errors.Is(err, ErrDiskFull)
	s.health.h.ReadOnlyFS = errors.Is(err, ErrReadOnlyFS)
}

// StillReadOnly reports whether the last write failed because the file
// system holding the database is read-only (ErrReadOnlyFS) and it still
// is: no write can succeed, so work that must be recorded should not
// start. It probes the file system (a statfs and at most one file) only
// after such a failure.
func (s *Store) StillReadOnly() bool {
	h := s.WriteHealth()
	return h.Failing() && h.ReadOnlyFS && fsReadOnly(filepath.Dir(s.path))
}

// DirReadOnly reports whether the file system holding the directory dir
// refuses writes as mounted read-only: its mount flags say so
// (mountedReadOnly), or creating a file in dir fails with EROFS. The
// second is needed: ext4 on recent kernels marks a file system that hit
// errors "emergency_ro", which refuses every write with EROFS but leaves
// statfs and access(2) saying it is writable. The probe file is removed at
// once; a dir that does not exist is not read-only.
func DirReadOnly(dir string) bool {
	if mountedReadOnly(dir) {
		return true
	}
	f, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return errors.Is(err, syscall.EROFS)
	}
	f.Close()
	os.Remove(f.Name())
	return false
}

// fsReadOnly is DirReadOnly, probed after a write failed; a test may
// replace it.
var fsReadOnly = DirReadOnly

// readOnlyCause wraps err, a write's failure, with ErrReadOnlyFS when the
// file system holding the database at path is mounted read-only: SQLite
// names EROFS as "disk I/O error" (or "readonly database"), which said
// nothing of the cause and read like a broken card or a bug. Only a
// failure of the store itself is checked, with a statfs and at most one
// probe file.
func readOnlyCause(err error, path string) error {
	if err == nil || errors.Is(err, ErrReadOnlyFS) || errors.Is(err, ErrDiskFull) {
		return err
	}
	if errors.Is(err, syscall.EROFS) || (storeFault(err) && fsReadOnly(filepath.Dir(path))) {
		return fmt.Errorf("%w: %w", ErrReadOnlyFS, err)
	}
	return err
}

// Unavailable reports whether err says the store cannot take a write (or
// answer a read) now, whatever was asked: its disk is full, its file is
// read-only, gone or broken, it is closed, or its write queue is full.
// Nothing of the failed call was stored; the same call may succeed later.
func Unavailable(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, ErrQueueFull) || storeFault(err)
}

// storeFault reports whether err of one write says the database cannot be
// written at all, rather than that the write itself was refused.
func storeFault(err error) bool {
	if errors.Is(err, ErrDiskFull) || errors.Is(err, ErrReadOnlyFS) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CORRUPT,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}
