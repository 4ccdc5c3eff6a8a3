package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dbtx is what a write runs its statements on: the writer's connection,
// inside the transaction the committer began there, or a *sql.Tx
// (migrations, verification).
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// commitFunc commits the writer's open transaction, which holds n writes,
// by calling commit.
type commitFunc func(commit func() error, n int) error

// commitHook is the fault seam for commits: Open copies it into the Store, so
// a test can make commits fail (e.g. with ENOSPC), block, or count batches.
// Tests that change it must not run in parallel with other tests.
var commitHook commitFunc = func(commit func() error, _ int) error { return commit() }

// op is one write waiting for its commit.
type op struct {
	// apply runs the write inside the writer's transaction. It may run twice
	// (in a batch that failed, then alone), so it must set its results anew
	// on every run.
	apply func(ctx context.Context, tx dbtx) error
	// done receives the write's result once; it has room for it, so the
	// writer never blocks on a caller that stopped waiting. Nil for a
	// queued write (then).
	done chan error
	// then, when set, gets the result of a write whose caller did not wait
	// for it (submitQueued). It runs on the writer, so it must be quick.
	then func(error)
	// prompt marks a queued write that does not linger (QueueEvent): a
	// queue holding one commits at once.
	prompt bool
	// answered is set by the writer once done or then has the result.
	answered bool
}

// answer hands o's result to its caller.
func (o *op) answer(err error) {
	o.answered = true
	if o.then != nil {
		o.then(err)
		return
	}
	o.done <- err
}

// writeQueue holds the writes not yet taken into a transaction, first in,
// first out, and who commits them. There is no writer goroutine: the
// caller of a waited write that finds nobody committing commits the queue
// itself (its own write first in line, or after the writes queued before
// it), so a write on an idle store costs no hand-off to another goroutine
// and back. A caller that finds a commit running leaves its write queued
// for that committer, which takes every queued write into its next
// transaction (group commit). Only one goroutine commits at a time: the
// one that set leading.
type writeQueue struct {
	mu      sync.Mutex
	pending []*op
	// leading is set while a goroutine commits the queue or is about to.
	leading bool
	// lastBatch is how many writes the last transaction took (leader only).
	lastBatch int
	// lingering is non-nil while queued writes wait for a waited one
	// (Options.Linger): the lead is taken, but nobody runs it; the timer
	// commits them once the linger has passed. A waited write or Close
	// that finds it set stops the timer and leads itself.
	lingering *linger
	closed    bool
	// drained is closed by the last leader once the store is closed and
	// the queue empty.
	drained     chan struct{}
	drainedOnce sync.Once
}

// submitQueued hands apply to the writer without waiting for its commit; then
// gets the result. Writes are taken in the order they are submitted or
// queued, so a write queued before another is committed no later than it:
// in the same transaction or an earlier one.
func (s *Store) submitQueued(apply func(ctx context.Context, tx dbtx) error, then func(error)) error {
	lead, err := s.enqueue(&op{apply: apply, then: then})
	if lead {
		go s.lead(nil, false)
	}
	return err
}

// linger is a lead held for queued writes while they wait for a waited
// one: nobody runs the lead until the timer fires.
type linger struct {
	timer *time.Timer
}

// lingerLocked holds the lead for the queued writes, when they should
// linger (lingerFor), by arming a timer that commits them once the linger
// has passed, and says whether it did. No goroutine waits meanwhile: a
// waited write that comes first takes the lead and commits them on its
// caller's goroutine, with no hand-off to another one and back. q.mu is
// held, and the caller holds the lead.
func (s *Store) lingerLocked() bool {
	wait, ok := s.lingerFor()
	if !ok {
		return false
	}
	l := &linger{}
	l.timer = time.AfterFunc(wait, func() { s.lingered(l) })
	s.wq.lingering = l
	return true
}

// lingered runs when l's linger has passed: it commits the queue unless
// the lead was taken meanwhile.
func (s *Store) lingered(l *linger) {
	q := &s.wq
	q.mu.Lock()
	if q.lingering != l {
		q.mu.Unlock() // taken by a waited write or by Close
		return
	}
	q.lingering = nil
	q.mu.Unlock()
	s.lead(nil, true)
}

// takeLingering takes the lead from a linger; q.mu is held and
// q.lingering set. The timer may be firing already: lingered then finds
// the lead taken.
func (s *Store) takeLingering() {
	s.wq.lingering.timer.Stop()
	s.wq.lingering = nil
}

// submit commits apply and waits for the commit: on the caller's
// goroutine when nobody else is committing. If ctx ends first it returns
// ctx's error; the write stays queued and may still commit.
func (s *Store) submit(ctx context.Context, apply func(ctx context.Context, tx dbtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{apply: apply, done: make(chan error, 1)}
	lead, err := s.enqueue(o)
	if err != nil {
		return err
	}
	if lead {
		s.lead(o, false)
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue adds o to the queue without waiting. lead says the caller must
// commit the queue (lead), because nobody else is, or because o is waited
// for and the leader was only lingering for such a write.
func (s *Store) enqueue(o *op) (lead bool, err error) {
	q := &s.wq
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, ErrClosed
	}
	if len(q.pending) >= s.opts.QueueLen {
		return false, ErrQueueFull
	}
	q.pending = append(q.pending, o)
	switch {
	case !q.leading:
		q.leading = true
		if o.done == nil && !o.prompt && s.lingerLocked() {
			return false, nil // held for a waited write, or the timer
		}
		return true, nil
	case q.lingering != nil && (o.done != nil || o.prompt):
		s.takeLingering() // the lead passes to this caller
		return true, nil
	}
	return false, nil
}

// lead commits the queue, one transaction of up to MaxBatch writes at a
// time, as its one leader. A caller leading for its own write (own) stops
// once that write is answered and leaves what others queued meanwhile to
// a linger or a goroutine of its own; a goroutine leading for queued
// writes (own nil) stops when the queue is empty. A batch of queued writes
// only, which nobody waits for, lingers (Options.Linger) for a write
// somebody waits for, then shares its commit: queued writes take no
// commit of their own, which would compete for the CPU and the disk with
// the work that queued them. lingered says the queue has lingered already:
// commit it now.
func (s *Store) lead(own *op, lingered bool) {
	q := &s.wq
	var batch []*op
	for {
		q.mu.Lock()
		if own != nil && own.answered {
			if len(q.pending) > 0 {
				if !s.lingerLocked() {
					go s.lead(nil, false) // still leading: the lead passes on
				}
				q.mu.Unlock()
				return
			}
			s.standDown()
			q.mu.Unlock()
			return
		}
		if len(q.pending) == 0 {
			s.standDown()
			q.mu.Unlock()
			return
		}
		if !lingered && s.lingerLocked() {
			q.mu.Unlock()
			return // the lead waits in the linger
		}
		lingered = false
		if q.lastBatch > len(q.pending) && len(q.pending) < s.opts.MaxBatch {
			// Fewer writes wait than the last commit answered: the
			// writers it answered are runnable (its answers readied
			// them) and many write again at once.
			// One yield lets them queue and share this commit instead of
			// each waiting for the next: with more writers than CPUs,
			// batches otherwise split into cohorts that take turns. It
			// costs nothing when nobody else is runnable.
			q.mu.Unlock()
			runtime.Gosched()
			q.mu.Lock()
		}
		n := min(len(q.pending), s.opts.MaxBatch)
		q.lastBatch = n
		batch = append(batch[:0], q.pending[:n]...)
		rest := copy(q.pending, q.pending[n:])
		clear(q.pending[rest:])
		q.pending = q.pending[:rest]
		q.mu.Unlock()
		s.commitBatch(batch)
		clear(batch) // drop references to answered ops
	}
}

// standDown ends the lead; q.mu is held.
func (s *Store) standDown() {
	q := &s.wq
	q.leading = false
	if q.closed {
		q.drainedOnce.Do(func() { close(q.drained) })
	}
}

// lingerFor says whether the queued writes should linger, and for how
// long: when none is waited for, the batch is not full, the store is open
// and lingering is on. q.mu is held.
func (s *Store) lingerFor() (time.Duration, bool) {
	q := &s.wq
	if s.opts.Linger <= 0 || q.closed || len(q.pending) >= s.opts.MaxBatch {
		return 0, false
	}
	for _, o := range q.pending {
		if o.done != nil || o.prompt {
			return 0, false
		}
	}
	return s.opts.Linger, true
}

// closeWriter stops accepting writes and returns once every write queued
// before it has been committed (or has failed).
func (s *Store) closeWriter() {
	q := &s.wq
	q.mu.Lock()
	q.closed = true
	switch {
	case q.lingering != nil:
		s.takeLingering() // Close takes the lead: no lingering once closed
		q.mu.Unlock()
		s.lead(nil, true)
	case q.leading:
		q.mu.Unlock()
		<-q.drained
	default:
		q.mu.Unlock()
	}
}

// commitBatch commits batch in one transaction and answers every caller.
// When one write fails (a constraint violation, say) that write alone gets
// the error and the others are retried as a new batch; when BEGIN or COMMIT
// fails, nothing was written and every caller gets that error.
func (s *Store) commitBatch(batch []*op) {
	for len(batch) > 0 {
		failed, err := s.runTx(batch)
		err = readOnlyCause(classifyWriteError(err), s.path)
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
	if err := s.wc.beginTx(ctx); err != nil {
		return -1, fmt.Errorf("begin audit transaction: %w", err)
	}
	tx := s.wc.conn
	// Chained inserts advance s.chain; a transaction that does not commit
	// must leave it where the database is.
	saved := s.chain
	s.pending = s.pending[:0]
	s.sums.reset()
	// fail undoes what the transaction changed in the committer's state.
	fail := func() {
		s.rollback(ctx)
		s.chain = saved
		clear(s.sums.floors) // they may hold what was rolled back
	}
	for i, o := range ops {
		if err := o.apply(ctx, tx); err != nil {
			fail()
			return i, err
		}
	}
	if !s.sums.empty() {
		if err := s.writeSummaries(ctx, tx); err != nil {
			fail()
			return -1, err
		}
	}
	if s.chain != saved {
		if err := s.writeSeal(ctx, tx); err != nil {
			fail()
			return -1, err
		}
	}
	if err := s.commit(s.wc.commitNow, len(ops)); err != nil {
		fail()
		return -1, fmt.Errorf("commit audit transaction: %w", err)
	}
	s.committed()
	if s.opts.Ring != nil {
		s.opts.Ring.Add(s.pending...) // only committed records reach the hot tier
	}
	return -1, nil
}

// rollback ends the writer's transaction after a failure (SQLite may have
// rolled it back already).
func (s *Store) rollback(ctx context.Context) {
	if err := s.wc.rollbackTx(ctx); err != nil {
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
