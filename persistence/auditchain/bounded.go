package auditchain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// MaxWindowBytes bounds what a bounded read (ReadWindowAtMost,
// ReadNewestAtMost) holds of the records' values at once, beyond one
// record: a window of DefaultWindow chain numbers may hold that many
// messages of up to several MiB each (a chat's text, a tool's result),
// gigabytes read whole before anything was verified, shipped or shown.
const MaxWindowBytes = 8 << 20

// seqSize is one record's chain_seq and the bytes of its values.
type seqSize struct{ seq, bytes int64 }

// windowSizes returns the chain_seq and size of every record with lo <
// chain_seq <= hi in the chained tables, in chain_seq order, without
// reading the values into memory (SQLite counts them).
func windowSizes(ctx context.Context, q Querier, f Filter, lo, hi int64) ([]seqSize, error) {
	var out []seqSize
	for _, t := range Tables {
		cols, err := SelectList(ctx, q, t, t.Name)
		if err != nil {
			return nil, err
		}
		var terms []string
		for _, c := range append(cols, ColHash) {
			if !strings.HasPrefix(c, "NULL AS ") {
				terms = append(terms, "coalesce(length(CAST("+c+" AS BLOB)), 0)")
			}
		}
		query := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s", ColChainSeq, strings.Join(terms, " + "), t.Name,
			f.and(isSeq+" AND "+ColChainSeq+" > ? AND "+ColChainSeq+" <= ?"))
		rows, err := q.QueryContext(ctx, query, append(append([]any(nil), f.Args...), lo, hi)...)
		if err != nil {
			return nil, fmt.Errorf("read %s record sizes: %w", t.Name, err)
		}
		for rows.Next() {
			var s seqSize
			if err := rows.Scan(&s.seq, &s.bytes); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read %s record sizes: %w", t.Name, err)
			}
			out = append(out, s)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s record sizes: %w", t.Name, err)
		}
	}
	slices.SortFunc(out, func(a, b seqSize) int { return cmp.Compare(a.seq, b.seq) })
	return out, nil
}

// ReadWindowAtMost is ReadWindow cut to the oldest records whose values
// take at most maxBytes (at least one record, whatever its size). It
// returns them and the chain_seq it read through: hi when the whole
// window fits, else the last record read; the next window starts after
// it.
func ReadWindowAtMost(ctx context.Context, q Querier, f Filter, lo, hi, maxBytes int64) ([]Record, int64, error) {
	sizes, err := windowSizes(ctx, q, f, lo, hi)
	if err != nil {
		return nil, lo, err
	}
	through, sum := hi, int64(0)
	for i, s := range sizes {
		if sum += s.bytes; sum > maxBytes && i > 0 {
			through = sizes[i-1].seq
			break
		}
	}
	recs, err := ReadWindow(ctx, q, f, lo, through)
	return recs, through, err
}

// ReadNewestAtMost is ReadWindow cut to the newest records whose values
// take at most maxBytes (at least one record). It returns them and the
// chain_seq they start after: lo when the whole window fits, else the
// record before the oldest read; a walk back from the head goes on below
// it.
func ReadNewestAtMost(ctx context.Context, q Querier, f Filter, lo, hi, maxBytes int64) ([]Record, int64, error) {
	sizes, err := windowSizes(ctx, q, f, lo, hi)
	if err != nil {
		return nil, hi, err
	}
	after, sum := lo, int64(0)
	for i := len(sizes) - 1; i >= 0; i-- {
		if sum += sizes[i].bytes; sum > maxBytes && i < len(sizes)-1 {
			after = sizes[i].seq
			break
		}
	}
	recs, err := ReadWindow(ctx, q, f, after, hi)
	return recs, after, err
}
