package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// VerifyChain checks the hash chain of the audit database at path from its
// newest retention checkpoint (or from the start) to its newest record,
// through a read-only connection, so it runs beside a writing Store. A broken
// chain is an error wrapping auditchain.ErrBroken (a *auditchain.BreakError
// naming the first bad record); the report says how far verification got.
func VerifyChain(ctx context.Context, path string) (*auditchain.Report, error) {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("verify audit chain: %w", err)
	}
	defer closeConn()
	chainID, err := readChainID(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("verify audit chain of %s: %w", path, err)
	}
	startSeq, prev, err := newestCheckpoint(ctx, conn, chainID)
	if err != nil {
		return nil, fmt.Errorf("verify audit chain of %s: %w", path, err)
	}
	rep, err := auditchain.VerifyRange(ctx, conn, auditchain.Filter{}, chainID, startSeq, prev, 0)
	if err != nil {
		return rep, fmt.Errorf("verify audit chain of %s: %w", path, err)
	}
	if rep.Unchained, err = countUnchained(ctx, conn); err != nil {
		return rep, fmt.Errorf("verify audit chain of %s: %w", path, err)
	}
	return rep, nil
}

// newestCheckpoint returns where the chain in the warm store starts: the
// newest retention checkpoint, or (0, genesis).
func newestCheckpoint(ctx context.Context, q queryer, chainID string) (int64, auditchain.Digest, error) {
	var (
		seq  int64
		hash string
	)
	err := q.QueryRowContext(ctx, `SELECT chain_seq, hash FROM chain_checkpoints ORDER BY chain_seq DESC LIMIT 1`).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, auditchain.Genesis(chainID), nil
	}
	if err != nil {
		return 0, auditchain.Digest{}, fmt.Errorf("read chain checkpoint: %w", err)
	}
	d, err := auditchain.ParseDigest(hash)
	if err != nil {
		return 0, d, fmt.Errorf("chain checkpoint at chain_seq %d: %w", seq, err)
	}
	return seq, d, nil
}

// countUnchained counts the rows written before schema v3 added the chain.
func countUnchained(ctx context.Context, q queryer) (int64, error) {
	parts := make([]string, 0, len(auditchain.Tables))
	for _, t := range auditchain.Tables {
		parts = append(parts, fmt.Sprintf("(SELECT count(*) FROM %s WHERE chain_seq IS NULL)", t.Name))
	}
	var n int64
	if err := q.QueryRowContext(ctx, "SELECT "+strings.Join(parts, " + ")).Scan(&n); err != nil {
		return 0, fmt.Errorf("count unchained rows: %w", err)
	}
	return n, nil
}
