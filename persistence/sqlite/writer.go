package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// commitFunc commits tx, which holds n writes.
type commitFunc func(tx *sql.Tx, n int) error

// commitHook is the fault seam for commits: Open copies it into the Store, so
// a test can make commits fail (e.g. with ENOSPC), block, or count batches.
// Tests that change it must not run in parallel with other tests.
var commitHook commitFunc = func(tx *sql.Tx, _ int) error { return tx.Commit() }

// op is one write waiting for the writer goroutine.
type op struct {
	// apply runs the write inside the writer's transaction. It may run twice
	// (in a batch that failed, then alone), so it must set its results anew
	// on every run.
	apply func(ctx context.Context, tx *sql.Tx) error
	// done receives the write's result once; it has room for it, so the
	// writer never blocks on a caller that stopped waiting. Nil for a
	// queued write (then).
	done chan error
	// then, when set, gets the result of a write whose caller did not wait
	// for it (submitQueued). It runs on the writer goroutine, so it must be quick.
	then func(error)
	// linger, when positive, is the most this queued write may wait to
	// share a commit, if shorter than Options.Linger (see linger).
	linger time.Duration
}

// answer hands o's result to its caller.
func (o *op) answer(err error) {
	if o.then != nil {
		o.then(err)
		return
	}
	o.done <- err
}

// submitQueued hands apply to the writer without waiting for its commit; then
// gets the result. The writer takes writes in the order they are
// submitted or queued, so a write queued before another is committed no
// later than it: in the same transaction or an earlier one.
func (s *Store) submitQueued(apply func(ctx context.Context, tx *sql.Tx) error, then func(error)) error {
	return s.enqueue(&op{apply: apply, then: then})
}

// submitQueuedWithin is submitQueued for a write that must not linger
// longer than within for a commit to share (see linger).
func (s *Store) submitQueuedWithin(within time.Duration, apply func(ctx context.Context, tx *sql.Tx) error, then func(error)) error {
	return s.enqueue(&op{apply: apply, then: then, linger: within})
}

// submit hands apply to the writer and waits for its commit. If ctx ends
// first it returns ctx's error; the write stays queued and may still commit.
func (s *Store) submit(ctx context.Context, apply func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{apply: apply, done: make(chan error, 1)}
	if err := s.enqueue(o); err != nil {
		return err
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue adds o to the queue without waiting.
func (s *Store) enqueue(o *op) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case s.queue <- o:
		return nil
	default:
		return ErrQueueFull
	}
}

// runWriter is the writer goroutine: it takes whatever is queued, up to
// MaxBatch writes, commits it as one transaction and answers each caller. It
// returns once Close has closed the queue and the queue is drained.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	batch := make([]*op, 0, s.opts.MaxBatch)
	for {
		first, ok := <-s.queue
		if !ok {
			return
		}
		batch = append(batch[:0], first)
		waited := first.done != nil
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o, ok := <-s.queue:
				if !ok {
					break fill // closed: commit this batch, then return above
				}
				batch = append(batch, o)
				waited = waited || o.done != nil
			default:
				break fill
			}
		}
		if !waited && len(batch) < s.opts.MaxBatch && s.opts.Linger > 0 {
			batch = s.linger(batch)
		}
		s.commitBatch(batch)
		clear(batch) // drop references to answered ops
	}
}

// linger holds a batch of queued writes, which nobody waits for, until a
// write somebody waits for arrives, the batch is full, Options.Linger has
// passed since the batch began, or the queue is closed: the queued writes
// then share that commit instead of taking one of their own, which would
// compete for the CPU and the disk with the work that queued them. A
// queued write still commits no later than any write submitted after it.
func (s *Store) linger(batch []*op) []*op {
	wait := s.opts.Linger
	for _, o := range batch {
		if o.linger > 0 {
			wait = min(wait, o.linger)
		}
	}
	begun := time.Now()
	if s.lingerTimer == nil {
		s.lingerTimer = time.NewTimer(wait)
	} else {
		s.lingerTimer.Reset(wait)
	}
	defer s.lingerTimer.Stop()
	for len(batch) < s.opts.MaxBatch {
		select {
		case o, ok := <-s.queue:
			if !ok {
				return batch
			}
			batch = append(batch, o)
			if o.done != nil {
				return batch
			}
			if o.linger > 0 && o.linger < wait {
				wait = o.linger
				left := wait - time.Since(begun)
				if left <= 0 {
					return batch
				}
				s.lingerTimer.Reset(left)
			}
		case <-s.lingerTimer.C:
			return batch
		}
	}
	return batch
}

// commitBatch commits batch in one transaction and answers every caller.
// When one write fails (a constraint violation, say) that write alone gets
// the error and the others are retried as a new batch; when BEGIN or COMMIT
// fails, nothing was written and every caller gets that error.
func (s *Store) commitBatch(batch []*op) {
	for len(batch) > 0 {
		failed, err := s.runTx(batch)
		err = classifyWriteError(err)
		s.noteWrite(err, failed < 0)
		if failed < 0 {
			for _, o := range batch {
				o.answer(err)
			}
			return
		}
		batch[failed].answer(err)
		batch = slices.Delete(batch, failed, failed+1)
		if len(batch) > 0 {
			s.log.Debug("audit write failed, retrying the rest of its batch", logKeyBatch, len(batch), logKeyErr, err)
		}
	}
}

// runTx applies ops in one transaction and commits it. When a write fails it
// returns that write's index and error; otherwise failed is -1 and err is the
// BEGIN or COMMIT error, if any. It stops at the first failing write: after
// some errors (SQLITE_FULL, I/O errors) SQLite has already rolled the whole
// transaction back, and later statements would run outside any transaction.
func (s *Store) runTx(ops []*op) (failed int, err error) {
	// The writer's statements are not tied to any caller's context: a
	// caller that stops waiting does not cancel a batch others wait for.
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return -1, fmt.Errorf("begin audit transaction: %w", err)
	}
	// Chained inserts advance s.chain; a transaction that does not commit
	// must leave it where the database is.
	saved := s.chain
	s.pending = s.pending[:0]
	for i, o := range ops {
		if err := o.apply(ctx, tx); err != nil {
			s.rollback(tx)
			s.chain = saved
			return i, err
		}
	}
	if s.chain != saved {
		if err := s.writeSeal(ctx, tx); err != nil {
			s.rollback(tx)
			s.chain = saved
			return -1, err
		}
	}
	if err := s.commit(tx, len(ops)); err != nil {
		s.rollback(tx)
		s.chain = saved
		return -1, fmt.Errorf("commit audit transaction: %w", err)
	}
	if s.opts.Ring != nil {
		s.opts.Ring.Add(s.pending...) // only committed records reach the hot tier
	}
	return -1, nil
}

// rollback ends tx after a failure. SQLite may already have rolled it back,
// and a failed Commit has ended it, so ErrTxDone is expected.
func (s *Store) rollback(tx *sql.Tx) {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		s.log.Warn("roll back audit transaction", logKeyErr, err)
	}
}

// classifyWriteError marks a full disk with ErrDiskFull: SQLite reports it
// as SQLITE_FULL, a failed fsync or write as ENOSPC.
func classifyWriteError(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.Is(err, syscall.ENOSPC) || (errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}
