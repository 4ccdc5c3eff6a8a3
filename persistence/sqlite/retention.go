package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// Defaults for the zero fields of Retention.
const (
	DefaultWarmWindow      = 7 * 24 * time.Hour  // records younger than this stay warm
	DefaultPruneInterval   = time.Hour           // how often a Retainer prunes
	DefaultPruneBatch      = 5000                // records deleted per transaction
	DefaultEventMaxAge     = 30 * 24 * time.Hour // without a cold tier, old events at the start of the chain go
	sizePruneFractionDenom = 10                  // a size prune removes 1/10 of the records at a time
)

// Retention says which records the warm store may delete. Deletion always
// takes the oldest records first, as a prefix of the hash chain, and leaves
// a checkpoint so the rest still verifies.
type Retention struct {
	// ColdTier is true when a cold tier is configured: then a record is
	// deleted only once it is older than WarmWindow and the cold tier holds
	// it (the shipped mark: MarkShipped, SetShipped), and MaxAge and
	// MaxBytes are ignored.
	ColdTier bool `toml:"-"`
	// WarmWindow is how long records stay warm with a cold tier. Zero means
	// DefaultWarmWindow.
	WarmWindow time.Duration `toml:"warm_window"`
	// MaxAge, without a cold tier, deletes records older than this. Zero
	// means records are never deleted for their age.
	MaxAge time.Duration `toml:"max_age"`
	// MaxBytes, without a cold tier, deletes the oldest records while the
	// database's used pages exceed this many bytes. Zero means no budget.
	MaxBytes int64 `toml:"max_bytes"`
	// EventMaxAge, without a cold tier, deletes events older than this
	// while they are the oldest records of the chain: deletion stays a
	// prefix of the chain, so it stops at the oldest tool call, LLM call or
	// message, which only MaxAge, MaxBytes or shipping delete. Zero means
	// DefaultEventMaxAge (30 days); negative means never.
	EventMaxAge time.Duration `toml:"event_max_age"`
	// Batch is the most records deleted per transaction, so that pruning
	// never holds the writer for long. Zero means DefaultPruneBatch.
	Batch int `toml:"batch"`
}

func (r Retention) withDefaults() (Retention, error) {
	if r.WarmWindow < 0 || r.MaxAge < 0 || r.MaxBytes < 0 || r.Batch < 0 {
		return r, fmt.Errorf("%w: retention window, age, size and batch must not be negative", ErrInvalidOptions)
	}
	if r.WarmWindow == 0 {
		r.WarmWindow = DefaultWarmWindow
	}
	if r.Batch == 0 {
		r.Batch = DefaultPruneBatch
	}
	if r.EventMaxAge == 0 {
		r.EventMaxAge = DefaultEventMaxAge
	}
	return r, nil
}

// PruneResult says what one Prune call deleted.
type PruneResult struct {
	Deleted int64  // records deleted
	UpToSeq int64  // the chain now starts after this chain_seq (the checkpoint)
	Reason  string // "shipped and older than the warm window", "older than max age", "over size budget"; empty when nothing was deleted
}

// Prune deletes, in one transaction through the writer, up to r.Batch of
// the oldest records that r allows deleting at time now, and records a
// checkpoint (the last deleted chain_seq and its hash) in the same
// transaction. Call it again while Deleted == r.Batch.
func (s *Store) Prune(ctx context.Context, r Retention, now time.Time) (PruneResult, error) {
	r, err := r.withDefaults()
	if err != nil {
		return PruneResult{}, fmt.Errorf("prune audit store: %w", err)
	}
	var res PruneResult
	err = s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		res = PruneResult{}
		upTo, reason, err := pruneBound(ctx, tx, r, now)
		if err != nil || upTo == 0 {
			return err
		}
		start, _, err := newestCheckpoint(ctx, tx, s.chainID)
		if err != nil {
			return err
		}
		upTo = min(upTo, start+int64(r.Batch))
		if upTo <= start {
			return nil
		}
		hash, err := recordHash(ctx, tx, upTo)
		if err != nil {
			return err
		}
		afterDelete, err := s.pruneSummaries(ctx, tx, upTo)
		if err != nil {
			return err
		}
		convs, err := stringColumn(ctx, tx, `SELECT DISTINCT conversation_id FROM messages WHERE chain_seq <= ?`, upTo)
		if err != nil {
			return fmt.Errorf("prune conversations: %w", err)
		}
		for _, t := range auditchain.Tables {
			n, err := execCount(ctx, tx, fmt.Sprintf("DELETE FROM %s WHERE chain_seq <= ?", t.Name), upTo)
			if err != nil {
				return fmt.Errorf("delete old %s: %w", t.Name, err)
			}
			res.Deleted += n
		}
		if err := afterDelete(); err != nil {
			return err
		}
		if err := pruneConversations(ctx, tx, convs, r.Batch); err != nil {
			return err
		}
		mac, err := s.checkpointMAC(upTo, hash)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO chain_checkpoints (chain_seq, hash, ts, deleted, reason, mac) VALUES (?, ?, ?, ?, ?, ?)`,
			upTo, hash, now.UTC().Format(tsLayout), res.Deleted, reason, mac); err != nil {
			return fmt.Errorf("store chain checkpoint: %w", err)
		}
		res.UpToSeq, res.Reason = upTo, reason
		return nil
	})
	if err != nil {
		return PruneResult{}, fmt.Errorf("prune audit store: %w", err)
	}
	return res, nil
}

// pruneConversations deletes, in the prune's transaction, the summary
// rows of conversations with no message left: those of convs (the ones
// that lost messages to this prune) found empty, and up to batch rows
// whose last message is older than every message left (rows emptied
// before this pass existed). Without it every conversation ever held, one
// per stateless API request, kept its row after retention deleted its
// messages, and the table grew for ever. A conversation that continues
// afterwards starts again at Seq 1: the Seqs it had are gone from this
// database, and every record keeps its own record_id and chain position,
// which is how the tiers tell records apart.
func pruneConversations(ctx context.Context, tx dbtx, convs []string, batch int) error {
	if len(convs) > 0 {
		st, err := tx.PrepareContext(ctx, `DELETE FROM conversations WHERE conversation_id = ?1
			AND NOT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?1)`)
		if err != nil {
			return fmt.Errorf("prune conversations: %w", err)
		}
		defer st.Close()
		for _, id := range convs {
			if _, err := st.ExecContext(ctx, id); err != nil {
				return fmt.Errorf("prune conversations: %w", err)
			}
		}
	}
	// A row's last_ms is its newest message's: older than the oldest
	// message left, it has none left.
	if _, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE conversation_id IN (
		SELECT conversation_id FROM conversations
		WHERE last_ms < (SELECT coalesce(min(ts_ms), 9223372036854775807) FROM messages)
		ORDER BY last_ms LIMIT ?)`, batch); err != nil {
		return fmt.Errorf("prune conversations: %w", err)
	}
	return nil
}

// pruneBound returns the largest chain_seq that r allows deleting up to
// (0 for none) and why.
func pruneBound(ctx context.Context, tx dbtx, r Retention, now time.Time) (int64, string, error) {
	head, err := auditchain.MaxSeq(ctx, tx, auditchain.Filter{})
	if err != nil || head == 0 {
		return 0, "", err
	}
	if r.ColdTier {
		shipped, err := shippedSeq(ctx, tx)
		if err != nil {
			return 0, "", err
		}
		aged, err := olderPrefix(ctx, tx, now.Add(-r.WarmWindow), head)
		if err != nil {
			return 0, "", err
		}
		return min(shipped, aged), ReasonShipped, nil
	}
	var bound int64
	reason := ""
	if r.EventMaxAge > 0 {
		if bound, err = oldEventsPrefix(ctx, tx, now.Add(-r.EventMaxAge), head); err != nil {
			return 0, "", err
		}
		if bound > 0 {
			reason = ReasonOldEvents
		}
	}
	if r.MaxAge > 0 {
		aged, err := olderPrefix(ctx, tx, now.Add(-r.MaxAge), head)
		if err != nil {
			return 0, "", err
		}
		if aged > bound {
			bound, reason = aged, "older than max age"
		}
	}
	if r.MaxBytes > 0 {
		used, err := usedBytes(ctx, tx)
		if err != nil {
			return 0, "", err
		}
		if used > r.MaxBytes {
			start, _, err := newestCheckpoint(ctx, tx, "")
			if err != nil {
				return 0, "", err
			}
			// Deleting frees pages for reuse, it does not shrink the
			// file: remove a tenth of the records and look again at the
			// next prune.
			bySize := start + max((head-start)/sizePruneFractionDenom, 1)
			if bySize > bound {
				bound, reason = bySize, "over size budget"
			}
		}
	}
	return bound, reason, nil
}

// olderPrefix returns the largest S such that every record with chain_seq
// <= S is older than cutoff.
func olderPrefix(ctx context.Context, tx dbtx, cutoff time.Time, head int64) (int64, error) {
	parts := make([]string, 0, len(auditchain.Tables))
	args := make([]any, 0, len(auditchain.Tables))
	for _, t := range auditchain.Tables {
		parts = append(parts, fmt.Sprintf("SELECT min(chain_seq) AS m FROM %s WHERE ts_ms >= ?", t.Name))
		args = append(args, cutoff.UnixMilli())
	}
	var first sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(m) FROM ("+strings.Join(parts, " UNION ALL ")+")", args...).Scan(&first); err != nil {
		return 0, fmt.Errorf("find records newer than %s: %w", cutoff.Format(time.RFC3339), err)
	}
	if !first.Valid {
		return head, nil
	}
	return first.Int64 - 1, nil
}

// ReasonShipped is the checkpoint reason of records deleted with a cold
// tier: the shipped mark said it held them.
const ReasonShipped = "shipped and older than the warm window"

// ReasonOldEvents is the checkpoint reason of events deleted by EventMaxAge.
const ReasonOldEvents = "events older than the event max age"

// oldEventsPrefix returns the largest S such that every record with
// chain_seq <= S is an event older than cutoff.
func oldEventsPrefix(ctx context.Context, tx dbtx, cutoff time.Time, head int64) (int64, error) {
	parts := make([]string, 0, len(auditchain.Tables))
	args := make([]any, 0, 1)
	for _, t := range auditchain.Tables {
		if t.Name == "events" {
			parts = append(parts, "SELECT min(chain_seq) AS m FROM events WHERE ts_ms >= ?")
			args = append(args, cutoff.UnixMilli())
			continue
		}
		parts = append(parts, fmt.Sprintf("SELECT min(chain_seq) AS m FROM %s", t.Name))
	}
	var first sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(m) FROM ("+strings.Join(parts, " UNION ALL ")+")", args...).Scan(&first); err != nil {
		return 0, fmt.Errorf("find the first record that is not an event older than %s: %w", cutoff.Format(time.RFC3339), err)
	}
	if !first.Valid {
		return head, nil
	}
	return first.Int64 - 1, nil
}

// recordHash returns the stored hash of the record numbered seq.
func recordHash(ctx context.Context, q queryer, seq int64) (string, error) {
	for _, t := range auditchain.Tables {
		var h string
		err := q.QueryRowContext(ctx, fmt.Sprintf("SELECT hash FROM %s WHERE chain_seq = ?", t.Name), seq).Scan(&h)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read hash of chain_seq %d: %w", seq, err)
		}
		return h, nil
	}
	return "", fmt.Errorf("read hash of chain_seq %d: no such record", seq)
}

// usedBytes returns the bytes of the database's pages in use.
func usedBytes(ctx context.Context, q queryer) (int64, error) {
	var pages, free, size int64
	err := q.QueryRowContext(ctx, "SELECT (SELECT page_count FROM pragma_page_count()), (SELECT freelist_count FROM pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())").
		Scan(&pages, &free, &size)
	if err != nil {
		return 0, fmt.Errorf("measure database size: %w", err)
	}
	return (pages - free) * size, nil
}

func execCount(ctx context.Context, tx dbtx, q string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
