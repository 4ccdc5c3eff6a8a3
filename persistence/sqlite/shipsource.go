package sqlite

// This file is the warm side of cold shipping: the methods through which
// persistence/cold.Shipper reads the chain and records its progress.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// ChainStart returns where this database's chain starts: the newest
// retention checkpoint (the last deleted chain_seq and its hash), or 0 and
// the genesis hash when nothing was deleted.
func (s *Store) ChainStart(ctx context.Context) (int64, auditchain.Digest, error) {
	seq, d, err := newestCheckpoint(ctx, s.rdb, s.chainID)
	if err != nil {
		return 0, d, fmt.Errorf("read chain start: %w", err)
	}
	return seq, d, nil
}

// ReadChain returns the chained records with after < chain_seq <= upTo, in
// chain_seq order, read without waiting for the writer: the oldest of
// them, when their values take more than auditchain.MaxWindowBytes (at
// least one).
func (s *Store) ReadChain(ctx context.Context, after, upTo int64) ([]auditchain.Record, error) {
	// One read transaction: the per-table queries must see one snapshot,
	// or a commit landing between them would show a gap in the chain.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read chain %d..%d: %w", after+1, upTo, err)
	}
	defer tx.Rollback() // read-only: nothing to commit
	recs, _, err := auditchain.ReadWindowAtMost(ctx, tx, auditchain.Filter{}, after, upTo, auditchain.MaxWindowBytes)
	if err != nil {
		return nil, fmt.Errorf("read chain %d..%d: %w", after+1, upTo, err)
	}
	return recs, nil
}

// HeadSeq returns the chain_seq of the chain's head: the newest chained
// record, or, when retention has deleted every record, the last one
// deleted (0 for a chain with no record yet).
func (s *Store) HeadSeq(ctx context.Context) (int64, error) {
	n, err := auditchain.MaxSeq(ctx, s.rdb, auditchain.Filter{})
	if err != nil {
		return 0, fmt.Errorf("read chain head: %w", err)
	}
	start, _, err := newestCheckpoint(ctx, s.rdb, s.chainID)
	if err != nil {
		return 0, fmt.Errorf("read chain head: %w", err)
	}
	return max(n, start), nil
}

// MarkShipped records durably, through the writer, that the cold tier holds
// every record up to chain_seq seq. The mark never moves backwards.
func (s *Store) MarkShipped(ctx context.Context, seq int64) error {
	if err := s.storeShipped(ctx, seq, true); err != nil {
		return fmt.Errorf("mark shipped up to chain_seq %d: %w", seq, err)
	}
	return nil
}

// SetShipped records durably, through the writer, that the cold tier holds
// every record up to chain_seq seq and none after: unlike MarkShipped it
// moves the mark backwards too. The shipper calls it when the cold tier,
// asked for its position, holds less than the mark says (it was replaced
// by an empty database, or lost data): the records after seq are then
// kept in warm by retention until they are shipped again.
func (s *Store) SetShipped(ctx context.Context, seq int64) error {
	if err := s.storeShipped(ctx, seq, false); err != nil {
		return fmt.Errorf("set shipped mark to chain_seq %d: %w", seq, err)
	}
	return nil
}

// storeShipped writes the shipped mark; forwardOnly keeps a higher one.
func (s *Store) storeShipped(ctx context.Context, seq int64, forwardOnly bool) error {
	q := `INSERT INTO cold_shipped (id, shipped_seq, ts) VALUES (1, ?, ?)
		ON CONFLICT (id) DO UPDATE SET shipped_seq = excluded.shipped_seq, ts = excluded.ts`
	if forwardOnly {
		q += ` WHERE excluded.shipped_seq > cold_shipped.shipped_seq`
	}
	now := time.Now().UTC().Format(tsLayout)
	return s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		if _, err := tx.ExecContext(ctx, q, seq, now); err != nil {
			return fmt.Errorf("store shipped mark: %w", err)
		}
		return nil
	})
}

// ShippedSeq returns the chain_seq up to which the cold tier holds every
// record, as last recorded by MarkShipped or SetShipped (0 when never).
func (s *Store) ShippedSeq(ctx context.Context) (int64, error) {
	return shippedSeq(ctx, s.rdb)
}

func shippedSeq(ctx context.Context, q queryer) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT shipped_seq FROM cold_shipped WHERE id = 1`).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read shipped mark: %w", err)
	}
	return n, nil
}
