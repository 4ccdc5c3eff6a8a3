package sqlite

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ErrRetainerStarted reports a second Start of a Retainer.
var ErrRetainerStarted = errors.New("retainer already started")

// RetentionStatus is a snapshot of a Retainer's work, for `status`.
type RetentionStatus struct {
	LastRun      time.Time // when the last prune pass ended; zero before the first
	LastDeleted  int64     // records deleted by the last pass
	TotalDeleted int64     // records deleted since Start
	ChainStart   int64     // the warm chain now starts after this chain_seq
	LastReason   string    // why the last records were deleted
	LastError    string    // the last pass's error, empty when it succeeded
}

// Retainer runs Prune on a Store periodically. Create it with NewRetainer,
// run it with Start, stop it with Close.
type Retainer struct {
	store    *Store
	policy   Retention
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex // guards status and started
	status  RetentionStatus
	started bool

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	after <-chan struct{} // the first pass waits for it; nil: none
}

// WaitFor makes the first pass wait until ready is closed (or the Retainer
// stops); call it before Start. With a cold tier, retention deletes what
// the warm store's shipped mark says the cold tier holds, and that mark is
// only current once the shipper has asked the cold tier since this start
// (cold.Shipper.Aligned).
func (r *Retainer) WaitFor(ready <-chan struct{}) { r.after = ready }

// NewRetainer returns a Retainer pruning s by policy every interval (zero
// means DefaultPruneInterval). now is the clock (nil means time.Now); a nil
// logger discards.
func NewRetainer(s *Store, policy Retention, interval time.Duration, now func() time.Time, log *slog.Logger) *Retainer {
	if interval <= 0 {
		interval = DefaultPruneInterval
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Retainer{store: s, policy: policy, interval: interval, now: now,
		log: log.With(logKeyComponent, "audit-retention"), done: make(chan struct{})}
}

// Start validates the policy and starts the goroutine, which prunes at once
// and then every interval until Close or the end of ctx.
func (r *Retainer) Start(ctx context.Context) error {
	if _, err := r.policy.withDefaults(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return ErrRetainerStarted
	}
	r.started = true
	ctx, r.cancel = context.WithCancel(ctx)
	go r.run(ctx)
	return nil
}

// Close stops the goroutine and waits for it; idempotent, safe without Start.
func (r *Retainer) Close() error {
	r.once.Do(func() {
		r.mu.Lock()
		started := r.started
		r.started = true
		r.mu.Unlock()
		if !started {
			close(r.done)
			return
		}
		r.cancel()
		<-r.done
	})
	return nil
}

// Status returns a snapshot of the Retainer's work.
func (r *Retainer) Status() RetentionStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *Retainer) run(ctx context.Context) {
	defer close(r.done)
	if r.after != nil {
		select {
		case <-r.after:
		case <-ctx.Done():
			return
		}
	}
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		r.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass prunes until nothing more may be deleted.
func (r *Retainer) pass(ctx context.Context) {
	var deleted int64
	var last PruneResult
	var err error
	for ctx.Err() == nil {
		var res PruneResult
		res, err = r.store.Prune(ctx, r.policy, r.now())
		if err != nil || res.Deleted == 0 {
			break
		}
		deleted += res.Deleted
		last = res
		if res.Reason == "over size budget" {
			break // look again at the next pass, after the pages are reused
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.LastRun, r.status.LastDeleted = r.now(), deleted
	r.status.TotalDeleted += deleted
	if last.UpToSeq > 0 {
		r.status.ChainStart, r.status.LastReason = last.UpToSeq, last.Reason
	}
	r.status.LastError = ""
	if err != nil && ctx.Err() == nil {
		r.status.LastError = err.Error()
		r.log.Warn("audit retention failed", logKeyErr, err)
	} else if deleted > 0 {
		r.log.Info("audit retention deleted old records", "deleted", deleted, "chain_start", last.UpToSeq, "reason", last.Reason)
	}
}
