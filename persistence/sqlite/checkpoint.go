package sqlite

import (
	"database/sql"
	"fmt"
	"sync/atomic"
)

// checkpointEvery is how many commits pass between two checkpoints.
//
// SQLite copies the write-ahead log back into the database file (a
// checkpoint: every page written since the last one, then a sync) once the
// log holds 1,000 pages, inside the commit that crossed the line: that
// commit, and every caller waiting for it, took several milliseconds more,
// one round trip in twenty or so. Instead a goroutine of the Store runs a
// PASSIVE checkpoint on a connection of its own every checkpointEvery
// commits, beside the commits, which it never blocks; the next transaction
// after a pause then starts the log again from its beginning. A round trip
// writes about 15 pages per commit, so the log holds about as many pages
// between checkpoints as before, and nothing is written while the node is
// idle. Commits that never pause (a flood of writes) never let the log
// start again: the writer's own automatic checkpoint, at backstopPages
// (writerDSN), bounds it then.
const checkpointEvery = 64

// backstopPages is the log size, in pages, at which the writer's
// connection checkpoints inside a commit, as SQLite does by default at
// 1,000: 16 MiB of 4 KiB pages.
const backstopPages = 4000

// checkpointer is the Store's background checkpoint goroutine and its
// connection.
type checkpointer struct {
	db    *sql.DB
	kick  chan struct{} // buffered (1): a checkpoint is due
	done  chan struct{} // closed when the goroutine returns
	since int           // commits since the last kick; the committer's only
	runs  atomic.Int64  // checkpoints run, for tests
}

// startCheckpointer opens the checkpoint connection with dsn and starts its
// goroutine.
func (s *Store) startCheckpointer(dsn string) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("open checkpoint connection: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s.ck = checkpointer{db: db, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go s.runCheckpoints()
	return nil
}

// committed counts a commit and asks for a checkpoint every
// checkpointEvery of them, without waiting. The committer calls it.
func (s *Store) committed() {
	s.ck.since++
	if s.ck.since < checkpointEvery {
		return
	}
	s.ck.since = 0
	select {
	case s.ck.kick <- struct{}{}:
	default: // one is due already
	}
}

// runCheckpoints runs a PASSIVE checkpoint per kick until the kick channel
// is closed. PASSIVE copies what no reader still needs and never waits for
// a lock: the writer's commits go on meanwhile.
func (s *Store) runCheckpoints() {
	defer close(s.ck.done)
	for range s.ck.kick {
		if _, err := s.ck.db.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
			s.log.Warn("checkpoint the audit log", logKeyErr, err)
		}
		s.ck.runs.Add(1)
	}
}

// stopCheckpointer ends the goroutine and closes its connection; the writer
// has stopped committing.
func (s *Store) stopCheckpointer() error {
	close(s.ck.kick)
	<-s.ck.done
	return s.ck.db.Close()
}
