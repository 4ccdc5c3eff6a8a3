package sqlite

import (
	"errors"
	"sync"
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
}

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
	if errors.Is(err, ErrDiskFull) {
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
