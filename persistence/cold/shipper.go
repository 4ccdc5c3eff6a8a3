package cold

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// Source is the warm store a Shipper reads from; persistence/sqlite.Store
// implements it.
type Source interface {
	// ChainID returns the id of the warm database's chain.
	ChainID() string
	// ChainStart returns the last chain_seq deleted from the warm store by
	// retention and its hash (0 and the genesis hash when none).
	ChainStart(ctx context.Context) (int64, auditchain.Digest, error)
	// ReadChain returns the records with after < chain_seq <= upTo.
	ReadChain(ctx context.Context, after, upTo int64) ([]auditchain.Record, error)
	// HeadSeq returns the newest chain_seq.
	HeadSeq(ctx context.Context) (int64, error)
	// MarkShipped durably records that the cold tier holds every record up
	// to seq; the mark never moves backwards.
	MarkShipped(ctx context.Context, seq int64) error
	// SetShipped durably records that the cold tier holds every record up
	// to seq and none after, moving the mark either way.
	SetShipped(ctx context.Context, seq int64) error
	// ShippedSeq returns the mark (0 when never set).
	ShippedSeq(ctx context.Context) (int64, error)
}

// Errors of the shipper.
var (
	// ErrStarted reports a second Start of a Shipper.
	ErrStarted = errors.New("cold shipper already started")
	// ErrAhead reports a cold tier holding more of a chain than the warm
	// store it ships from (warm restored from an older copy?).
	ErrAhead = errors.New("cold tier is ahead of the warm store")
)

// Log keys of the shipper.
const (
	logKeyComponent = "component"
	logKeyErr       = "err"
	logKeyRetryIn   = "retry_in"
	logKeyFrom      = "from_seq"
	logKeyTo        = "to_seq"
	logKeyCold      = "cold"
)

// Status is a snapshot of a Shipper's progress.
type Status struct {
	// ShippedSeq is the chain_seq up to which the cold tier holds every
	// record (as far as the shipper knows); HeadSeq the chain's head in
	// the warm store, read when the status is taken.
	ShippedSeq, HeadSeq int64
	// Lag is HeadSeq - ShippedSeq: records waiting to be shipped, current
	// also while the cold tier is unreachable.
	Lag int64
	// Shipped counts records shipped since Start (re-shipped ones too).
	Shipped int64
	// LastShip is when the last batch was committed in the cold tier.
	LastShip time.Time
	// LastError is the last failure, empty after a success; Failures
	// counts consecutive failures and RetryIn is the current backoff.
	LastError string
	Failures  int           // consecutive failures
	RetryIn   time.Duration // current backoff
}

// Shipper moves a warm store's chained records to the cold tier. Create it
// with NewShipper, run it with Start, stop it with Close.
type Shipper struct {
	src  Source
	dst  *Store
	cfg  Config
	log  *slog.Logger
	kick chan struct{} // wakes the loop early; buffered, 1

	mu      sync.Mutex // guards status and started
	status  Status
	started bool

	cancel context.CancelFunc
	done   chan struct{} // closed when the loop returns
	once   sync.Once

	aligned     chan struct{} // closed once the warm mark is what the cold tier holds
	alignedOnce sync.Once
}

// NewShipper returns a Shipper from src to dst. A nil logger discards.
func NewShipper(src Source, dst *Store, log *slog.Logger) *Shipper {
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	return &Shipper{
		src: src, dst: dst, cfg: dst.cfg,
		log:     log.With(logKeyComponent, "audit-cold-shipper", logKeyCold, dst.cfg.URL),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		aligned: make(chan struct{}),
	}
}

// Aligned is closed once the shipper, since its start, has asked the cold
// tier what it holds of the chain and made the warm store's shipped mark
// that. Until then the mark is what an earlier run of the node saw, and a
// cold tier replaced or restored meanwhile may no longer hold what it
// says: retention must not delete by it (tiers.Open makes it wait).
func (sh *Shipper) Aligned() <-chan struct{} { return sh.aligned }

// Start starts the shipping goroutine. It stops when Close is called or ctx
// ends.
func (sh *Shipper) Start(ctx context.Context) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.started {
		return ErrStarted
	}
	sh.started = true
	ctx, sh.cancel = context.WithCancel(ctx)
	go sh.run(ctx)
	return nil
}

// Close stops the shipping goroutine and waits for it. A batch in flight is
// abandoned (its request canceled): the cold tier stored all of it or none.
// It is idempotent, and safe without Start.
func (sh *Shipper) Close() error {
	sh.once.Do(func() {
		sh.mu.Lock()
		started := sh.started
		sh.started = true // a Start after Close fails with ErrStarted
		sh.mu.Unlock()
		if !started {
			close(sh.done)
			return
		}
		sh.cancel()
		<-sh.done
	})
	return nil
}

// Kick wakes the shipper to look for new records now rather than after its
// poll interval. It never blocks.
func (sh *Shipper) Kick() {
	select {
	case sh.kick <- struct{}{}:
	default:
	}
}

// Status returns a snapshot of the shipper's progress.
//
// It reads the warm head (bounded by statusReadTimeout), so the lag counts
// records written since the shipper's last step: during an outage that
// step may be minutes ago. If the read fails it keeps the last figure.
func (sh *Shipper) Status() Status {
	ctx, cancel := context.WithTimeout(context.Background(), statusReadTimeout)
	head, err := sh.src.HeadSeq(ctx)
	cancel()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err == nil && head >= sh.status.HeadSeq {
		sh.status.HeadSeq, sh.status.Lag = head, max(head-sh.status.ShippedSeq, 0)
	}
	return sh.status
}

// statusReadTimeout bounds Status's read of the warm head.
const statusReadTimeout = time.Second

// position is where the cold copy of the chain ends.
type position struct {
	seq  int64
	hash auditchain.Digest
	held bool // the cold tier holds the chain (a chains row), as last seen
}

func (sh *Shipper) run(ctx context.Context) {
	defer close(sh.done)
	var (
		pos     *position // nil: ask the cold tier again
		backoff time.Duration
	)
	for {
		wait := sh.cfg.PollInterval
		n, err := sh.step(ctx, &pos)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			pos = nil // the cold tier may have stored the batch: ask it
			// It may also have been replaced by an empty database:
			// look for the tables again too.
			sh.dst.recheckSchema()
			backoff = min(max(2*backoff, sh.cfg.MinBackoff), sh.cfg.MaxBackoff)
			wait = backoff
			sh.mu.Lock()
			sh.status.LastError, sh.status.RetryIn = err.Error(), backoff
			sh.status.Failures++
			failures := sh.status.Failures
			sh.mu.Unlock()
			sh.log.Warn("cold shipping failed; records wait in the warm store", logKeyErr, err, logKeyRetryIn, backoff, "failures", failures)
		default:
			backoff = 0
			if n == sh.cfg.BatchSize {
				wait = 0 // more is waiting
			}
		}
		if wait == 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-sh.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// step ships at most one batch and returns how many records it shipped.
func (sh *Shipper) step(ctx context.Context, pos **position) (int, error) {
	chainID := sh.src.ChainID()
	startSeq, startHash, err := sh.src.ChainStart(ctx)
	if err != nil {
		return 0, err
	}
	asked := *pos == nil // the position comes from the cold tier this step
	if *pos == nil {
		sh.seedProgress(ctx)
		st, ok, err := sh.dst.Chain(ctx, chainID)
		if err != nil {
			return 0, err
		}
		p := &position{seq: startSeq, hash: startHash}
		if ok {
			d, err := auditchain.ParseDigest(st.HeadHash)
			if err != nil {
				return 0, fmt.Errorf("cold chain %s head: %w", chainID, err)
			}
			p = &position{seq: st.ShippedSeq, hash: d, held: true}
		}
		*pos = p
	}
	if (*pos).seq < startSeq {
		// Retention deleted records the cold tier never got (it was
		// configured later, or its data was lost): the cold copy starts
		// later. `audit verify --tier all` reports the records warm
		// deleted as shipped that it lacks: they are in neither tier.
		sh.log.Warn("warm records were pruned before reaching the cold tier; the cold copy has a gap",
			logKeyFrom, (*pos).seq+1, logKeyTo, startSeq)
		*pos = &position{seq: startSeq, hash: startHash, held: (*pos).held}
	}
	head, err := sh.src.HeadSeq(ctx)
	if err != nil {
		return 0, err
	}
	p := *pos
	sh.setProgress(p.seq, head)
	if head < p.seq {
		// The cold tier holds records this warm store never wrote, e.g.
		// warm was restored from an older copy: its next records would
		// reuse chain numbers the cold tier already has. Shipping stops
		// until an operator looks.
		return 0, fmt.Errorf("%w: cold tier holds chain %s up to chain_seq %d, warm only up to %d",
			ErrAhead, chainID, p.seq, head)
	}
	if asked {
		if err := sh.markAsCold(ctx, p.seq); err != nil {
			return 0, err
		}
		sh.alignedOnce.Do(func() { close(sh.aligned) })
	}
	if head == p.seq {
		return 0, nil
	}
	recs, err := sh.src.ReadChain(ctx, p.seq, p.seq+int64(sh.cfg.BatchSize))
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, nil
	}
	// A position not asked for this step is the shipper's memory of a
	// chain the cold tier held, which may have lost records since.
	if err := sh.dst.Ship(ctx, Batch{ChainID: chainID, AfterSeq: p.seq, Prev: p.hash, Records: recs, Continues: !asked && p.held}); err != nil {
		return 0, err
	}
	last := recs[len(recs)-1]
	d, err := auditchain.ParseDigest(last.Hash)
	if err != nil {
		return 0, fmt.Errorf("warm record %s: %w", last.RecordID, err)
	}
	*pos = &position{seq: last.Seq, hash: d, held: true}
	sh.mu.Lock()
	sh.status.Shipped += int64(len(recs))
	sh.status.LastShip = time.Now()
	sh.status.LastError, sh.status.Failures, sh.status.RetryIn = "", 0, 0
	sh.mu.Unlock()
	sh.setProgress(last.Seq, max(head, last.Seq))
	// Only now may warm retention delete these records.
	if err := sh.src.MarkShipped(ctx, last.Seq); err != nil {
		return len(recs), fmt.Errorf("record shipped mark: %w", err)
	}
	return len(recs), nil
}

// markAsCold makes the warm store's shipped mark what the cold tier, just
// asked, holds: seq. The cold tier may hold more than the mark says: a
// batch it committed whose answer was lost (the server died after its
// commit, the connection broke); without this the lag would count those
// records, and retention keep them, until newer records ship. It may hold
// less: it was replaced by an empty database or lost data; without this,
// retention would delete warm records the cold tier does not have. It
// writes only when the two differ, and runs only when the position was
// asked for (at the start, after a failure), never at an idle poll.
func (sh *Shipper) markAsCold(ctx context.Context, seq int64) error {
	marked, err := sh.src.ShippedSeq(ctx)
	if err != nil {
		return err
	}
	if seq == marked {
		return nil
	}
	if seq < marked {
		sh.log.Warn("the cold tier holds less of the chain than was shipped to it; the warm store keeps the rest until it is shipped again",
			logKeyFrom, seq+1, logKeyTo, marked)
	}
	if err := sh.src.SetShipped(ctx, seq); err != nil {
		return fmt.Errorf("record shipped mark: %w", err)
	}
	return nil
}

// seedProgress takes the shipped mark from the warm store while the
// shipper knows none (before its first step reached the cold tier), so its
// lag is right during an outage that began before it started.
func (sh *Shipper) seedProgress(ctx context.Context) {
	seq, err := sh.src.ShippedSeq(ctx)
	if err != nil {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if seq > sh.status.ShippedSeq {
		sh.status.ShippedSeq = seq
		sh.status.Lag = max(sh.status.HeadSeq-seq, 0)
	}
}

func (sh *Shipper) setProgress(shipped, head int64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.status.ShippedSeq, sh.status.HeadSeq, sh.status.Lag = shipped, head, max(head-shipped, 0)
}
