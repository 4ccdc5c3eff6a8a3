// Package tiers assembles a node's audit trail: the warm SQLite store, the
// hot ring it feeds, warm retention, and, when configured, the shipper to
// the cold libSQL tier. A node opens one Tiers, starts it, hands Warm to
// whatever records audit events, reports Status in `status`, and closes it.
//
// # Concurrency
//
// Open, Start and Close are called by the node's owner; Status, Warm and
// Ring may be used from any goroutine. Close stops the shipper and the
// retainer (waiting for their goroutines) before closing the warm store.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package tiers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/evoclaw/evoclaw/persistence/cold"
	"github.com/evoclaw/evoclaw/persistence/hot"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Config is the `[audit]` part of a node's configuration. The zero value
// is ready: a hot ring of hot.DefaultCapacity, hourly retention that keeps
// everything (no cold tier, no budget), no cold tier.
type Config struct {
	// HotCapacity is the number of recent records kept in memory. Zero
	// means hot.DefaultCapacity.
	HotCapacity int `toml:"hot_capacity"`
	// Retention says what the warm store may delete; ColdTier is set from
	// Cold.
	Retention sqlite.Retention `toml:"retention"`
	// RetentionInterval is how often retention runs. Zero means
	// sqlite.DefaultPruneInterval.
	RetentionInterval time.Duration `toml:"retention_interval"`
	// Cold configures the cold tier; an empty URL means none. Its token
	// is read from the environment (cold.TokenEnv) by Open.
	Cold cold.Config `toml:"cold"`
	// DiskBudgetMB is the most the warm database's files should take on
	// disk, in MiB. Over it, OverBudget reports true and an ERROR line is
	// logged every 10 minutes; nothing is deleted for it. Zero means
	// DefaultDiskBudgetMB; negative means no budget.
	DiskBudgetMB int `toml:"disk_budget_mb"`
}

// Validate checks the keys of the [audit] section that would otherwise be
// taken as their defaults when negative (hot_capacity,
// retention_interval) or refused only when the trail starts, without
// their names (the retention's and the cold tier's). The errors name the
// keys.
func (c Config) Validate() error {
	var errs []error
	for _, k := range []struct {
		key string
		neg bool
		v   any
	}{
		{"hot_capacity", c.HotCapacity < 0, c.HotCapacity},
		{"retention_interval", c.RetentionInterval < 0, c.RetentionInterval},
		{"retention.warm_window", c.Retention.WarmWindow < 0, c.Retention.WarmWindow},
		{"retention.max_age", c.Retention.MaxAge < 0, c.Retention.MaxAge},
		{"retention.max_bytes", c.Retention.MaxBytes < 0, c.Retention.MaxBytes},
		{"retention.batch", c.Retention.Batch < 0, c.Retention.Batch},
		{"cold.batch_size", c.Cold.BatchSize < 0, c.Cold.BatchSize},
		{"cold.poll_interval", c.Cold.PollInterval < 0, c.Cold.PollInterval},
		{"cold.min_backoff", c.Cold.MinBackoff < 0, c.Cold.MinBackoff},
		{"cold.max_backoff", c.Cold.MaxBackoff < 0, c.Cold.MaxBackoff},
		{"cold.request_timeout", c.Cold.RequestTimeout < 0, c.Cold.RequestTimeout},
		{"cold.max_answer_bytes", c.Cold.MaxAnswerBytes < 0, c.Cold.MaxAnswerBytes},
	} {
		if k.neg {
			errs = append(errs, fmt.Errorf("audit.%s: %v must not be negative", k.key, k.v))
		}
	}
	return errors.Join(errs...)
}

// ValidateSync checks the audit_sync setting of a node or an agent, which
// becomes the warm store's sqlite.Options.Sync, and fills in its default:
// empty means sqlite.SyncNormal. The error names the key.
func ValidateSync(sync *string) error {
	switch *sync {
	case "":
		*sync = sqlite.SyncNormal
	case sqlite.SyncNormal, sqlite.SyncFull:
	default:
		return fmt.Errorf("audit_sync: %q, want %q or %q", *sync, sqlite.SyncNormal, sqlite.SyncFull)
	}
	return nil
}

// Status is what `status` reports about the audit trail.
type Status struct {
	// Retention is the warm retention's status.
	Retention sqlite.RetentionStatus
	// Cold is nil without a cold tier.
	Cold *cold.Status
	// Budget is the warm database's size against its disk budget.
	Budget BudgetStatus
}

// Tiers is a node's audit trail.
type Tiers struct {
	// Warm is the node's SQLite store: record everything through it.
	Warm *sqlite.Store
	// Ring holds the most recent committed records.
	Ring *hot.Ring

	retainer *sqlite.Retainer
	budget   *budget
	coldDB   *cold.Store   // nil without a cold tier
	shipper  *cold.Shipper // nil without a cold tier
}

// Open opens the warm store at path (warm options as for sqlite.Open; its
// Ring is set here) and prepares retention and, when cfg.Cold.URL is set,
// the cold tier, taking its token from the environment. Nothing runs until
// Start; the cold tier is not contacted before then.
func Open(path string, warm sqlite.Options, cfg Config, log *slog.Logger) (*Tiers, error) {
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	cfg.Retention.ColdTier = cfg.Cold.Enabled()
	t := &Tiers{Ring: hot.NewRing(cfg.HotCapacity)}
	var coldDB *cold.Store
	if cfg.Cold.Enabled() {
		var err error
		if coldDB, err = cold.Open(cfg.Cold.FromEnv()); err != nil {
			return nil, fmt.Errorf("open audit tiers: %w", err)
		}
	}
	warm.Ring = t.Ring
	if warm.Logger == nil {
		warm.Logger = log
	}
	st, err := sqlite.Open(path, warm)
	if err != nil {
		if coldDB != nil {
			coldDB.Close()
		}
		return nil, fmt.Errorf("open audit tiers: %w", err)
	}
	t.Warm = st
	t.retainer = sqlite.NewRetainer(st, cfg.Retention, cfg.RetentionInterval, nil, log)
	t.budget = newBudget(path, cfg.DiskBudgetMB, log)
	if coldDB != nil {
		t.coldDB = coldDB
		t.shipper = cold.NewShipper(st, coldDB, log)
		// The shipped mark may be stale (the cold tier was replaced or
		// restored while the node was down): retention deletes by it only
		// once the shipper has set it from the cold tier.
		t.retainer.WaitFor(t.shipper.Aligned())
	}
	return t, nil
}

// Start starts retention and the shipper. They stop on Close or when ctx
// ends.
func (t *Tiers) Start(ctx context.Context) error {
	if err := t.retainer.Start(ctx); err != nil {
		return fmt.Errorf("start audit retention: %w", err)
	}
	t.budget.start(ctx)
	if t.shipper != nil {
		if err := t.shipper.Start(ctx); err != nil {
			return fmt.Errorf("start cold shipper: %w", err)
		}
	}
	return nil
}

// Status returns the retention and shipping status.
func (t *Tiers) Status() Status {
	s := Status{Retention: t.retainer.Status(), Budget: t.budget.snapshot()}
	if t.shipper != nil {
		cs := t.shipper.Status()
		s.Cold = &cs
	}
	return s
}

// OverBudget reports whether the warm database's files exceed the disk
// budget ([audit] disk_budget_mb), with a sentence saying by how much, for
// readiness checks. It reads the last measurement (every 10 s).
func (t *Tiers) OverBudget() (bool, string) {
	b := t.budget.snapshot()
	if !b.Over {
		return false, ""
	}
	return true, fmt.Sprintf("audit database takes %d MiB, over its disk budget of %d MiB", b.UsedBytes>>20, b.LimitBytes>>20)
}

// Close stops the shipper and retention, then closes the stores. Call it
// once, after the last record was written.
func (t *Tiers) Close() error {
	var errs []error
	if t.shipper != nil {
		errs = append(errs, t.shipper.Close())
	}
	t.budget.stop()
	errs = append(errs, t.retainer.Close())
	if t.coldDB != nil {
		errs = append(errs, t.coldDB.Close())
	}
	errs = append(errs, t.Warm.Close())
	return errors.Join(errs...)
}
