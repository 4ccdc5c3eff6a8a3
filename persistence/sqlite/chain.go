package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// chainState is the writer's position in the database's hash chain: the
// chain_seq and hash of the last record written. Only the committer
// touches it; runTx restores it when a transaction does not commit.
type chainState struct {
	seq  int64
	head auditchain.Digest
}

// chainInserts holds, per chained table, an INSERT of its hashed columns
// plus hash, built from auditchain.Tables so the two cannot drift apart.
var chainInserts = func() map[string]string {
	m := make(map[string]string, len(auditchain.Tables))
	for _, t := range auditchain.Tables {
		cols := append(append([]string(nil), t.Columns...), auditchain.ColHash)
		m[t.Name] = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", t.Name, strings.Join(cols, ", "),
			strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
	}
	return m
}()

// insertChained inserts a record of table whose hashed column values,
// without chain_seq, are vals, as the next record of the chain. It runs on
// the committer inside its transaction.
func (s *Store) insertChained(ctx context.Context, tx dbtx, table string, vals []any) error {
	seq := s.chain.seq + 1
	// One array holds the hashed values, chain_seq, then the hash.
	args := make([]any, len(vals)+2)
	copy(args, vals)
	args[len(vals)] = seq
	full := args[: len(vals)+1 : len(vals)+1]
	h, err := s.hasher.Hash(s.chain.head, table, full)
	if err != nil {
		return err
	}
	args[len(vals)+1] = h.String()
	if _, err := s.txExec(ctx, tx, chainInserts[table], args...); err != nil {
		return fmt.Errorf("insert %s row: %w", table, err)
	}
	s.chain = chainState{seq: seq, head: h}
	s.sums.add(table, vals)
	if s.opts.Ring != nil {
		s.pending = append(s.pending, EntryOf(auditchain.Record{Table: table, Seq: seq, Values: full}))
	}
	return nil
}

// ChainID returns the id of this database's hash chain.
func (s *Store) ChainID() string { return s.chainID }

// readChainID returns the chain id stored by migration v3.
func readChainID(ctx context.Context, q queryer) (string, error) {
	var id string
	if err := q.QueryRowContext(ctx, `SELECT value FROM audit_meta WHERE key = 'chain_id'`).Scan(&id); err != nil {
		return "", fmt.Errorf("read chain id: %w", err)
	}
	return id, nil
}

// queryer is what reads need from *sql.DB, *sql.Conn and *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// loadChain finds the last record of the chain (or the newest retention
// checkpoint, when every record after it is gone) to continue from.
func loadChain(ctx context.Context, q queryer, chainID string) (chainState, error) {
	st := chainState{head: auditchain.Genesis(chainID)}
	var (
		cpSeq  sql.NullInt64
		cpHash sql.NullString
	)
	err := q.QueryRowContext(ctx, `SELECT chain_seq, hash FROM chain_checkpoints ORDER BY chain_seq DESC LIMIT 1`).Scan(&cpSeq, &cpHash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("read chain checkpoint: %w", err)
	}
	if cpSeq.Valid {
		d, err := auditchain.ParseDigest(cpHash.String)
		if err != nil {
			return st, fmt.Errorf("read chain checkpoint %d: %w", cpSeq.Int64, err)
		}
		st = chainState{seq: cpSeq.Int64, head: d}
	}
	for _, t := range auditchain.Tables {
		var (
			seq  int64
			hash string
		)
		err := q.QueryRowContext(ctx, fmt.Sprintf(`SELECT chain_seq, hash FROM %s WHERE typeof(chain_seq) = 'integer' ORDER BY chain_seq DESC LIMIT 1`, t.Name)).Scan(&seq, &hash)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("read chain head of %s: %w", t.Name, err)
		}
		if seq > st.seq {
			d, err := auditchain.ParseDigest(hash)
			if err != nil {
				return st, fmt.Errorf("read chain head %s chain_seq %d: %w", t.Name, seq, err)
			}
			st = chainState{seq: seq, head: d}
		}
	}
	return st, nil
}
