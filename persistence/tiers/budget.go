package tiers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// Defaults of the audit disk budget.
const (
	// DefaultDiskBudgetMB is the audit database's disk budget (database,
	// WAL and shared-memory files together) in MiB: room for months of a
	// busy node's records on a 16 GB SD card with space to spare.
	DefaultDiskBudgetMB = 256
	// DefaultBudgetInterval is how often the budget is checked.
	DefaultBudgetInterval = 10 * time.Second
	// budgetAlarmEvery spaces the ERROR lines while over budget.
	budgetAlarmEvery = 10 * time.Minute
)

// BudgetStatus is the audit database's size against its disk budget.
type BudgetStatus struct {
	// LimitBytes is the budget; 0 means none.
	LimitBytes int64
	// UsedBytes is the size of the database files at the last check.
	UsedBytes int64
	// Over is true while UsedBytes exceeds LimitBytes.
	Over bool
	// Checked is when the files were last measured; zero before the first.
	Checked time.Time
	// LastError is why the last measurement failed, empty when it worked.
	LastError string
}

// budget measures the warm database's files on a ticker and raises an
// alarm while they exceed the limit: a flag for readiness, a metric, and an
// ERROR line at most every budgetAlarmEvery. It deletes nothing: what may
// be deleted is retention's business; the alarm tells the operator.
type budget struct {
	path     string
	limit    int64 // bytes; 0 means none
	interval time.Duration
	now      func() time.Time
	size     func(path string) (int64, error) // fault seam: the files' size
	log      *slog.Logger
	alarm    *rate.Window

	mu     sync.Mutex // guards status
	status BudgetStatus

	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned; nil before start
}

func newBudget(path string, mb int, log *slog.Logger) *budget {
	var limit int64
	switch {
	case mb == 0:
		limit = DefaultDiskBudgetMB << 20
	case mb > 0:
		limit = int64(mb) << 20
	}
	return &budget{path: path, limit: limit, interval: DefaultBudgetInterval, now: time.Now, size: databaseSize,
		log: log, alarm: rate.NewWindow(1, budgetAlarmEvery)}
}

// databaseSize sums the sizes of an SQLite database and its WAL and
// shared-memory files; missing side files count as empty.
func databaseSize(path string) (int64, error) {
	var total int64
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && p != path {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("measure audit database: %w", err)
		}
		total += fi.Size()
	}
	return total, nil
}

// check measures once and updates the status and the alarm.
func (b *budget) check() {
	if b.limit == 0 {
		return
	}
	used, err := b.size(b.path)
	now := b.now()
	b.mu.Lock()
	b.status.LimitBytes, b.status.Checked = b.limit, now
	if err != nil {
		b.status.LastError = err.Error()
		b.mu.Unlock()
		return
	}
	b.status.LastError, b.status.UsedBytes = "", used
	was := b.status.Over
	b.status.Over = used > b.limit
	over := b.status.Over
	b.mu.Unlock()
	switch {
	case over:
		if _, ok := b.alarm.Allow(now); ok {
			b.log.Error("audit database is over its disk budget: records are kept, not deleted; ship them to a cold tier, set [audit.retention] max_age or max_bytes, or raise [audit] disk_budget_mb",
				"used_bytes", used, "budget_bytes", b.limit, "file", b.path)
		}
	case was:
		b.log.Info("audit database is back within its disk budget", "used_bytes", used, "budget_bytes", b.limit)
	}
}

// start measures at once, then every interval until stop.
func (b *budget) start(ctx context.Context) {
	b.check()
	ctx, b.cancel = context.WithCancel(ctx)
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		t := time.NewTicker(b.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				b.check()
			}
		}
	}()
}

// stop ends the goroutine and waits for it; safe without start and twice.
func (b *budget) stop() {
	if b.done == nil {
		return
	}
	b.cancel()
	<-b.done
}

func (b *budget) snapshot() BudgetStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status
}
