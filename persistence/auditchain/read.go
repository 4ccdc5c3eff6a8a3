package auditchain

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// DefaultWindow is how many chain_seq numbers ReadWindow callers read at a
// time by default: large enough to amortise the queries, small enough to
// keep memory bounded on a Pi.
const DefaultWindow = 2000

// Querier is what reading needs from *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Filter restricts reads to one chain in a store holding several (the cold
// tier): an SQL condition such as "chain_id = ?" and its arguments. The zero
// Filter matches every row.
type Filter struct {
	Cond string // SQL condition; empty matches every row
	Args []any  // arguments of Cond's placeholders
}

func (f Filter) and(cond string) string {
	if f.Cond == "" {
		return cond
	}
	return "(" + f.Cond + ") AND " + cond
}

// isSeq holds for a row whose chain_seq is an integer. SQLite compares
// values of different types without complaint (a BLOB is greater than any
// number), so every query over chain_seq ranges checks the type first.
const isSeq = "typeof(" + ColChainSeq + ") = 'integer'"

// ReadWindow returns the records with lo < chain_seq <= hi from every
// chained table, in chain_seq order.
func ReadWindow(ctx context.Context, q Querier, f Filter, lo, hi int64) ([]Record, error) {
	var out []Record
	for _, t := range Tables {
		cols, err := SelectList(ctx, q, t, t.Name)
		if err != nil {
			return nil, err
		}
		query := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s ORDER BY %s",
			strings.Join(cols, ", "), ColHash, t.Name, f.and(isSeq+" AND "+ColChainSeq+" > ? AND "+ColChainSeq+" <= ?"), ColChainSeq)
		args := append(append([]any(nil), f.Args...), lo, hi)
		recs, err := readRecords(ctx, q, t, query, args)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out, nil
}

// SelectList returns the select expressions of t's Columns for reading
// from, the table as named in a query ("tool_calls", "warm.tool_calls"):
// an Optional column the table lacks (a database from before it was added,
// read as it is) reads as NULL, which is what such a row hashes as.
func SelectList(ctx context.Context, q Querier, t Table, from string) ([]string, error) {
	cols := t.Columns
	if len(t.Optional) == 0 {
		return cols, nil
	}
	rows, err := q.QueryContext(ctx, "SELECT * FROM "+from+" LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", t.Name, err)
	}
	have, err := rows.Columns()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", t.Name, err)
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c
		if t.optional(c) && !slices.Contains(have, c) {
			out[i] = "NULL AS " + c
		}
	}
	return out, nil
}

func readRecords(ctx context.Context, q Querier, t Table, query string, args []any) ([]Record, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s records: %w", t.Name, err)
	}
	defer rows.Close()
	var out []Record
	n := len(t.Columns)
	for rows.Next() {
		vals := make([]any, n+1)
		ptrs := make([]any, n+1)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read %s records: %w", t.Name, err)
		}
		r := Record{Table: t.Name, Values: normalize(vals[:n])}
		r.RecordID, _ = r.Values[0].(string)
		seq, ok := r.Values[n-1].(int64)
		if !ok {
			return nil, fmt.Errorf("read %s record %s: chain_seq is %T, want an integer", t.Name, r.RecordID, r.Values[n-1])
		}
		r.Seq = seq
		switch h := vals[n].(type) {
		case string:
			r.Hash = h
		case []byte:
			r.Hash = string(h)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s records: %w", t.Name, err)
	}
	return out, nil
}

// normalize maps driver value types onto the ones Hash encodes the same
// way whatever the driver: integers as int64.
func normalize(vals []any) []any {
	for i, v := range vals {
		switch x := v.(type) {
		case int:
			vals[i] = int64(x)
		case int32:
			vals[i] = int64(x)
		}
	}
	return vals
}

// MaxSeq returns the largest chain_seq in the chained tables matching f, 0
// when there is none.
func MaxSeq(ctx context.Context, q Querier, f Filter) (int64, error) {
	var top int64
	for _, t := range Tables {
		rows, err := q.QueryContext(ctx, fmt.Sprintf("SELECT max(%s) FROM %s WHERE %s", ColChainSeq, t.Name, f.and(isSeq)), f.Args...)
		if err != nil {
			return 0, fmt.Errorf("read chain head of %s: %w", t.Name, err)
		}
		var m sql.NullInt64
		if rows.Next() {
			err = rows.Scan(&m)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return 0, fmt.Errorf("read chain head of %s: %w", t.Name, err)
		}
		if m.Valid && m.Int64 > top {
			top = m.Int64
		}
	}
	return top, nil
}

// Report is the outcome of verifying one chain.
type Report struct {
	ChainID   string // the chain verified
	StartSeq  int64  // verification started after this chain_seq (0: from genesis)
	StartHash string // the hash the record after StartSeq chains to
	Verified  int64  // records verified
	HeadSeq   int64  // chain_seq of the last record
	HeadHash  string // its hash
	Unchained int64  // rows written before the chain existed (no chain_seq), not verifiable
	// KeyID names the key that authenticated the chain's start and head
	// (see Key.ID); empty when they were not authenticated.
	KeyID string
}

// VerifyRange verifies the chain from the record after startSeq (whose
// hash was prev) to the newest record matching f, reading window chain_seq
// numbers at a time, fewer where their values would take more than
// MaxWindowBytes. On a break it returns the partial report and a
// *BreakError.
func VerifyRange(ctx context.Context, q Querier, f Filter, chainID string, startSeq int64, prev Digest, window int64) (*Report, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	rep := &Report{ChainID: chainID, StartSeq: startSeq, StartHash: prev.String()}
	top, err := MaxSeq(ctx, q, f)
	if err != nil {
		return rep, err
	}
	v := NewVerifier(startSeq, prev)
	for lo := startSeq; lo < top; {
		recs, through, err := ReadWindowAtMost(ctx, q, f, lo, min(lo+window, top), MaxWindowBytes)
		if err != nil {
			return rep, err
		}
		lo = through
		for _, r := range recs {
			if err := v.Add(r); err != nil {
				seq, head := v.Head()
				rep.HeadSeq, rep.HeadHash, rep.Verified = seq, head.String(), v.Count()
				return rep, err
			}
		}
	}
	seq, head := v.Head()
	rep.HeadSeq, rep.HeadHash, rep.Verified = seq, head.String(), v.Count()
	return rep, nil
}
