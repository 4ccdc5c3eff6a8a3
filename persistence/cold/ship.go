package cold

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// Batch is a run of consecutive records of one chain to ship.
type Batch struct {
	// ChainID is the chain the records belong to.
	ChainID string
	// AfterSeq and Prev say where the batch starts: its first record has
	// chain_seq AfterSeq+1 and chains to Prev. For a chain new to the cold
	// tier they are recorded as where its cold copy starts.
	AfterSeq int64
	Prev     auditchain.Digest // hash of record AfterSeq (genesis for 0)
	// Records in chain_seq order, consecutive from AfterSeq+1.
	Records []auditchain.Record
	// Continues says the batch continues what the cold tier was seen to
	// hold, without asking it again: the chain's shipped_seq then moves to
	// the batch's last record only if the cold tier still holds the chain
	// up to AfterSeq, and Ship fails with ErrColdBehind otherwise (it lost
	// records since: restored from an older backup, or replaced), rather
	// than leave a gap that nothing would ever fill.
	Continues bool
}

// Errors of Ship.
var (
	// ErrBadBatch reports a Batch whose records are not consecutive.
	ErrBadBatch = errors.New("malformed cold batch")
	// ErrNotStored reports a batch the cold tier acknowledged but, asked
	// right after, does not hold.
	ErrNotStored = errors.New("cold tier acknowledged a batch it does not hold")
	// ErrColdBehind reports a cold tier that no longer holds the chain up
	// to where a Continues batch starts.
	ErrColdBehind = errors.New("cold tier holds less of the chain than was shipped to it")
)

// rowsPerInsert bounds one multi-row INSERT: 21 columns times this stays
// well under SQLite's 32766 bound parameters.
const rowsPerInsert = 500

// Ship stores b in the cold tier in one atomic request: every record is
// inserted unless a row with its record_id exists (so shipping a batch again
// changes nothing), and the chain's shipped_seq moves to the batch's last
// record. It creates the schema first when needed. It then reads the
// chain's state back and fails with ErrNotStored unless the cold tier
// holds the batch's last record.
func (s *Store) Ship(ctx context.Context, b Batch) error {
	if len(b.Records) == 0 {
		return nil
	}
	for i, r := range b.Records {
		if r.Seq != b.AfterSeq+1+int64(i) {
			return fmt.Errorf("ship to cold tier: %w: record %d has chain_seq %d, want %d", ErrBadBatch, i, r.Seq, b.AfterSeq+1+int64(i))
		}
	}
	if err := s.EnsureSchema(ctx); err != nil {
		return fmt.Errorf("ship to cold tier: %w", err)
	}
	script, args := shipScript(b)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("ship to cold tier: %w", err)
	}
	defer conn.Close()
	// The driver sends the whole script as one batch in one request; each
	// step runs only if the one before succeeded, and a failure rolls the
	// transaction back, so a batch is stored whole or not at all.
	first, last := b.AfterSeq+1, b.Records[len(b.Records)-1]
	if _, err := conn.ExecContext(ctx, script, args...); err != nil {
		return fmt.Errorf("ship %d records (chain_seq %d..%d) to cold tier: %w", len(b.Records), first, last.Seq, err)
	}
	conn.Close()
	// An acknowledgement is only the server's word: a broken server or
	// proxy may answer success for a batch it never stored. Ask for the
	// chain's head, in another request, before the warm store may count
	// the records as shipped (and retention delete them).
	st, ok, err := s.Chain(ctx, b.ChainID)
	if err != nil {
		return fmt.Errorf("confirm %d records (chain_seq %d..%d) shipped to cold tier: %w", len(b.Records), first, last.Seq, err)
	}
	if b.Continues && (!ok || st.ShippedSeq < b.AfterSeq) {
		return fmt.Errorf("%w: chain_seq %d..%d follow chain_seq %d, but the cold tier holds chain %s only up to %d (restored from an older copy, or replaced?): they were not counted, the shipper asks it again",
			ErrColdBehind, first, last.Seq, b.AfterSeq, b.ChainID, st.ShippedSeq)
	}
	if !ok || st.ShippedSeq < last.Seq || (st.ShippedSeq == last.Seq && st.HeadHash != last.Hash) {
		return fmt.Errorf("%w: chain_seq %d..%d acknowledged, the cold tier holds chain %s up to %d (head %s)",
			ErrNotStored, first, last.Seq, b.ChainID, st.ShippedSeq, auditchain.Printable(st.HeadHash))
	}
	return nil
}

// shipScript builds the SQL script and arguments that store b.
func shipScript(b Batch) (string, []any) {
	var (
		sb   strings.Builder
		args []any
	)
	sb.WriteString("BEGIN;\n")
	for _, t := range auditchain.Tables {
		var rows []auditchain.Record
		for _, r := range b.Records {
			if r.Table == t.Name {
				rows = append(rows, r)
			}
		}
		for len(rows) > 0 {
			n := min(len(rows), rowsPerInsert)
			cols := append(append([]string{"chain_id"}, t.Columns...), auditchain.ColHash)
			fmt.Fprintf(&sb, "INSERT INTO %s (%s) VALUES ", t.Name, strings.Join(cols, ", "))
			one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
			for i, r := range rows[:n] {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(one)
				args = append(args, b.ChainID)
				args = append(args, r.Values...)
				args = append(args, r.Hash)
			}
			sb.WriteString(" ON CONFLICT DO NOTHING;\n")
			rows = rows[n:]
		}
	}
	last := b.Records[len(b.Records)-1]
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if b.Continues {
		// Only a chain the cold tier holds up to AfterSeq moves on: one
		// that lost records since keeps its head, and Ship's read back
		// says so.
		sb.WriteString(`UPDATE chains SET shipped_seq = ?, head_hash = ?, updated_ts = ?
		WHERE chain_id = ? AND shipped_seq >= ? AND shipped_seq < ?;
COMMIT;`)
		args = append(args, last.Seq, last.Hash, now, b.ChainID, b.AfterSeq, last.Seq)
		return sb.String(), args
	}
	sb.WriteString(`INSERT INTO chains (chain_id, first_seq, first_prev, shipped_seq, head_hash, updated_ts) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (chain_id) DO UPDATE SET shipped_seq = excluded.shipped_seq, head_hash = excluded.head_hash, updated_ts = excluded.updated_ts
		WHERE excluded.shipped_seq > chains.shipped_seq;
COMMIT;`)
	args = append(args, b.ChainID, b.AfterSeq+1, b.Prev.String(), last.Seq, last.Hash, now)
	return sb.String(), args
}

// ChainState is what the cold tier holds of one chain.
type ChainState struct {
	ChainID    string // the chain
	FirstSeq   int64  // chain_seq of the first record shipped
	FirstPrev  string // the hash that record chains to
	ShippedSeq int64  // chain_seq of the last record shipped
	HeadHash   string // its hash
}

// Chain returns the cold tier's state of chainID; ok is false when nothing
// of it was shipped yet.
func (s *Store) Chain(ctx context.Context, chainID string) (st ChainState, ok bool, err error) {
	if err := s.EnsureSchema(ctx); err != nil {
		return st, false, fmt.Errorf("read cold chain state: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	err = s.db.QueryRowContext(ctx, `SELECT chain_id, first_seq, first_prev, shipped_seq, head_hash FROM chains WHERE chain_id = ?`, chainID).
		Scan(&st.ChainID, &st.FirstSeq, &st.FirstPrev, &st.ShippedSeq, &st.HeadHash)
	if errors.Is(err, sql.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read cold chain state of %s: %w", chainID, err)
	}
	return st, true, nil
}

// Chains returns the state of every chain in the cold tier.
func (s *Store) Chains(ctx context.Context) ([]ChainState, error) {
	if err := s.EnsureSchema(ctx); err != nil {
		return nil, fmt.Errorf("list cold chains: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, `SELECT chain_id, first_seq, first_prev, shipped_seq, head_hash FROM chains ORDER BY chain_id`)
	if err != nil {
		return nil, fmt.Errorf("list cold chains: %w", err)
	}
	defer rows.Close()
	var out []ChainState
	for rows.Next() {
		var st ChainState
		if err := rows.Scan(&st.ChainID, &st.FirstSeq, &st.FirstPrev, &st.ShippedSeq, &st.HeadHash); err != nil {
			return nil, fmt.Errorf("list cold chains: %w", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list cold chains: %w", err)
	}
	return out, nil
}
