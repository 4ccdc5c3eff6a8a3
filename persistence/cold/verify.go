package cold

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// ErrTailMissing reports a cold chain whose newest shipped records are gone.
var ErrTailMissing = fmt.Errorf("%w: newest shipped records missing", auditchain.ErrBroken)

// VerifyChain checks chainID's records in the cold tier from the first one
// shipped to the last, and that none of the shipped ones is missing at the
// end. A break is an error wrapping auditchain.ErrBroken.
func (s *Store) VerifyChain(ctx context.Context, st ChainState) (*auditchain.Report, error) {
	prev, err := auditchain.ParseDigest(st.FirstPrev)
	if err != nil {
		return nil, fmt.Errorf("verify cold chain %s: start hash: %w", st.ChainID, err)
	}
	f := auditchain.Filter{Cond: "chain_id = ?", Args: []any{st.ChainID}}
	// Every row of the chain must be in the verified range: one with a
	// chain_seq before the first shipped, or not an integer, would be seen
	// by queries without being verified.
	if err := auditchain.CheckCoverage(ctx, s.db, f, st.FirstSeq-1, auditchain.Legacy{}); err != nil {
		return &auditchain.Report{ChainID: st.ChainID}, fmt.Errorf("verify cold chain %s: %w", auditchain.Printable(st.ChainID), err)
	}
	rep, err := auditchain.VerifyRange(ctx, s.db, f, st.ChainID, st.FirstSeq-1, prev, 0)
	if err != nil {
		return rep, fmt.Errorf("verify cold chain %s: %w", st.ChainID, err)
	}
	if rep.HeadSeq < st.ShippedSeq {
		return rep, fmt.Errorf("verify cold chain %s: %w: chain_seq %d..%d were shipped but are not in the cold tier",
			st.ChainID, ErrTailMissing, rep.HeadSeq+1, st.ShippedSeq)
	}
	// The records must end in the head the chains row names, which is what
	// the shipper confirmed and what the join with warm compares: records
	// rewritten with every hash recomputed verify among themselves, and only
	// this tells them from the ones shipped. A batch shipped since the
	// chains row was read (a node ships while this runs) leaves the record
	// at ShippedSeq as it was.
	got := rep.HeadHash
	if rep.HeadSeq != st.ShippedSeq {
		h, ok, err := s.RecordHash(ctx, st.ChainID, st.ShippedSeq)
		if err != nil {
			return rep, fmt.Errorf("verify cold chain %s: %w", st.ChainID, err)
		}
		if !ok {
			return rep, fmt.Errorf("verify cold chain %s: %w: chain_seq %d was shipped but is not in the cold tier",
				st.ChainID, ErrTailMissing, st.ShippedSeq)
		}
		got = h
	}
	if got != st.HeadHash {
		return rep, fmt.Errorf("verify cold chain %s: %w: the record at chain_seq %d has hash %s, but the node shipped it with hash %s (chains.head_hash): the records were rewritten",
			st.ChainID, ErrHeadRewritten, st.ShippedSeq, auditchain.Printable(got), auditchain.Printable(st.HeadHash))
	}
	return rep, nil
}

// ErrHeadRewritten reports a cold chain whose records verify among
// themselves but do not end in the head that was shipped.
var ErrHeadRewritten = fmt.Errorf("%w: cold records differ from the shipped head", auditchain.ErrBroken)

// RecordHash returns the stored hash of chainID's record chain_seq seq.
func (s *Store) RecordHash(ctx context.Context, chainID string, seq int64) (string, bool, error) {
	f := auditchain.Filter{Cond: "chain_id = ?", Args: []any{chainID}}
	recs, err := auditchain.ReadWindow(ctx, s.db, f, seq-1, seq)
	if err != nil {
		return "", false, fmt.Errorf("read cold record %d of chain %s: %w", seq, chainID, err)
	}
	if len(recs) == 0 {
		return "", false, nil
	}
	return recs[0].Hash, true, nil
}

// Query runs one read-only statement on the cold tier. The libSQL server
// offers no read-only mode on a connection (it refuses PRAGMA query_only),
// so the statement is first run on a private in-memory SQLite database with
// the cold schema, locked down with query_only and no ATTACH, where SQLite
// itself refuses any write (sqlite.CheckReadOnly); a refusal wraps
// ErrReadOnly. Only then is it sent to the server, inside a transaction
// that is rolled back. Pragmas that set or act (sqlite.CheckPragma) are
// refused before that. For isolation enforced by the server too, give
// auditors a read-only token (a JWT with "a": "ro").
func (s *Store) Query(ctx context.Context, query string, args ...any) (columns []string, rows [][]any, err error) {
	// The in-memory copy has no journal or WAL to change, so a setting or
	// checkpoint would pass there: such pragmas are refused by name first.
	err = sqlite.CheckPragma(query)
	if err == nil {
		err = sqlite.CheckReadOnly(ctx, fullSchema, query, args...)
	}
	if err != nil {
		if errors.Is(err, sqlite.ErrReadOnly) {
			return nil, nil, fmt.Errorf("query cold tier: %w: %w", ErrReadOnly, err)
		}
		return nil, nil, fmt.Errorf("query cold tier: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	// Run in a transaction that is rolled back: nothing the statement did
	// stays.
	err = inTx(ctx, s.db, false, func(conn *sql.Conn) error {
		r, err := conn.QueryContext(ctx, query, args...)
		if err != nil {
			return classifyColdError(err)
		}
		defer r.Close()
		if columns, err = r.Columns(); err != nil {
			return err
		}
		for r.Next() {
			row := make([]any, len(columns))
			ptrs := make([]any, len(columns))
			for i := range row {
				ptrs[i] = &row[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				return err
			}
			rows = append(rows, row)
		}
		if err := r.Err(); err != nil {
			return classifyColdError(err)
		}
		return r.Close() // before the ROLLBACK on the same connection
	})
	if err != nil {
		return nil, nil, fmt.Errorf("query cold tier: %w", err)
	}
	return columns, rows, nil
}

// classifyColdError marks the server's refusals of writes with ErrReadOnly.
func classifyColdError(err error) error {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"readonly", "read-only", "read only", "attempt to write", "not authorized", "authorization"} {
		if strings.Contains(msg, s) {
			return fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
	}
	return err
}

// ErrTiersDisagree reports a warm and a cold copy of a chain that do not
// join: a gap between them, or different hashes for the same record.
var ErrTiersDisagree = fmt.Errorf("%w: warm and cold tiers do not join", auditchain.ErrBroken)

// VerifyJoin checks that a node's warm chain (verified as warm) continues
// its cold copy st: no record is in neither tier, and where both hold a
// record they hold the same hash. warmHash returns the warm hash of a
// chain_seq, ok false when warm no longer holds it.
func VerifyJoin(ctx context.Context, warm *auditchain.Report, st ChainState, warmHash func(ctx context.Context, seq int64) (string, bool, error), coldHash func(ctx context.Context, seq int64) (string, bool, error)) error {
	if st.ShippedSeq < warm.StartSeq {
		return fmt.Errorf("%w: chain_seq %d..%d were pruned from warm but never reached cold", ErrTiersDisagree, st.ShippedSeq+1, warm.StartSeq)
	}
	if warm.StartSeq > 0 && warm.StartSeq >= st.FirstSeq {
		h, ok, err := coldHash(ctx, warm.StartSeq)
		if err != nil {
			return err
		}
		if ok && h != warm.StartHash {
			return fmt.Errorf("%w: warm checkpoint at chain_seq %d says hash %s, cold holds %s", ErrTiersDisagree, warm.StartSeq, warm.StartHash, h)
		}
	}
	if st.ShippedSeq > warm.StartSeq {
		h, ok, err := warmHash(ctx, st.ShippedSeq)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: cold holds chain_seq %d, beyond the warm head %d", ErrTiersDisagree, st.ShippedSeq, warm.HeadSeq)
		}
		// The cold record itself, not only the chains row that names it:
		// records rewritten under an untouched chains row must not join.
		c, ok, err := coldHash(ctx, st.ShippedSeq)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: cold names chain_seq %d as shipped but does not hold it", ErrTiersDisagree, st.ShippedSeq)
		}
		if h != c {
			first, err := firstDifference(ctx, max(warm.StartSeq+1, st.FirstSeq), st.ShippedSeq, warmHash, coldHash)
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: chain_seq %d has hash %s in warm and %s in cold; the first record that differs is chain_seq %d",
				ErrTiersDisagree, st.ShippedSeq, h, auditchain.Printable(c), first)
		}
		if h != st.HeadHash {
			return fmt.Errorf("%w: chain_seq %d has hash %s in warm and %s in the cold chains row", ErrTiersDisagree, st.ShippedSeq, h, auditchain.Printable(st.HeadHash))
		}
	}
	return nil
}

// firstDifference returns the first chain_seq in lo..hi whose hash differs
// between the tiers, given that it differs at hi. Each hash covers every
// record before it, so the hashes agree up to some record and differ from
// it on: a bisection finds it in log2(hi-lo) reads of each tier. A record
// one tier lacks counts as differing.
func firstDifference(ctx context.Context, lo, hi int64, warmHash, coldHash func(ctx context.Context, seq int64) (string, bool, error)) (int64, error) {
	same := func(seq int64) (bool, error) {
		w, wok, err := warmHash(ctx, seq)
		if err != nil {
			return false, err
		}
		c, cok, err := coldHash(ctx, seq)
		if err != nil {
			return false, err
		}
		return wok && cok && w == c, nil
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		ok, err := same(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// PrunedRange is what one warm retention pass deleted: chain_seq First to
// Last, at TS (its checkpoint), for Reason.
type PrunedRange struct {
	First, Last int64
	TS, Reason  string
}

// VerifyPrunedShipped checks that the cold copy st holds every record the
// warm store deleted as shipped (pruned, the warm retention passes oldest
// first, with reason shippedReason): such a record before the cold copy's
// start is in neither tier. A cold copy that starts later than the chain
// for records deleted otherwise (a cold tier configured later than other
// retention) is no break.
func VerifyPrunedShipped(st ChainState, pruned []PrunedRange, shippedReason string) error {
	var first, last, passes int64
	var ts string
	for _, p := range pruned {
		if p.Reason != shippedReason || p.First >= st.FirstSeq {
			continue
		}
		if passes == 0 {
			first, ts = p.First, p.TS
		}
		last = min(p.Last, st.FirstSeq-1)
		passes++
	}
	if passes == 0 {
		return nil
	}
	return fmt.Errorf("%w: chain_seq %d..%d were deleted from warm as shipped (%d retention passes, the first at %s), but the cold copy starts at chain_seq %d: they are in neither tier",
		ErrTiersDisagree, first, last, passes, auditchain.Printable(ts), st.FirstSeq)
}
