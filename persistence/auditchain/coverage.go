package auditchain

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Legacy tells CheckCoverage which rows of a table predate the chain and
// may lack a chain_seq: those with a NULL chain_seq and a row id column
// (IDColumn) up to MaxID. The zero Legacy admits none.
type Legacy struct {
	IDColumn string           // the row id column, e.g. "id"
	MaxID    map[string]int64 // per table, the largest id of a row that predates the chain
}

func (l Legacy) cond(table string) (string, []any) {
	if l.IDColumn == "" || l.MaxID[table] <= 0 {
		return "", nil
	}
	return fmt.Sprintf("%s IS NULL AND %s <= ?", ColChainSeq, l.IDColumn), []any{l.MaxID[table]}
}

// CountLegacy counts the rows matching f that legacy admits without a
// chain_seq.
func CountLegacy(ctx context.Context, q Querier, f Filter, legacy Legacy) (int64, error) {
	var total int64
	for _, t := range Tables {
		cond, args := legacy.cond(t.Name)
		if cond == "" {
			continue
		}
		n, err := scanInt(ctx, q, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", t.Name, f.and(cond)), append(append([]any(nil), f.Args...), args...))
		if err != nil {
			return 0, fmt.Errorf("count rows of %s that predate the chain: %w", t.Name, err)
		}
		total += n
	}
	return total, nil
}

// CheckCoverage checks that every row of the chained tables matching f is
// in the part of the chain being verified: its chain_seq is an integer
// greater than startSeq, unless legacy admits it. Rows outside would be
// seen by queries and reports without ever being verified. It returns a
// *BreakError (BreakUnchained) naming the first such row.
func CheckCoverage(ctx context.Context, q Querier, f Filter, startSeq int64, legacy Legacy) error {
	for _, t := range Tables {
		bad := fmt.Sprintf("NOT (%s AND %s > ?)", isSeq, ColChainSeq)
		args := append(append([]any(nil), f.Args...), startSeq)
		if cond, largs := legacy.cond(t.Name); cond != "" {
			bad += " AND NOT (" + cond + ")"
			args = append(args, largs...)
		}
		query := fmt.Sprintf("SELECT %s, typeof(%s), quote(substr(%s, 1, 40)) FROM %s WHERE %s LIMIT 1",
			ColRecordID, ColChainSeq, ColChainSeq, t.Name, f.and(bad))
		rows, err := q.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("check that every %s row is chained: %w", t.Name, err)
		}
		var (
			id       sql.NullString
			typ, val string
			found    bool
		)
		if rows.Next() {
			found = true
			err = rows.Scan(&id, &typ, &val)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return fmt.Errorf("check that every %s row is chained: %w", t.Name, err)
		}
		if !found {
			continue
		}
		var why string
		switch {
		case typ == "null":
			why = "its chain_seq is NULL"
		case typ != "integer":
			why = "its chain_seq is a " + strings.ToUpper(typ) + " value, not an integer"
		case startSeq > 0:
			why = fmt.Sprintf("its chain_seq %s is not after the chain's start, chain_seq %d", Printable(val), startSeq)
		default:
			why = fmt.Sprintf("its chain_seq %s is not positive", Printable(val))
		}
		return &BreakError{Kind: BreakUnchained, Table: t.Name, RecordID: id.String, Detail: why}
	}
	return nil
}

func scanInt(ctx context.Context, q Querier, query string, args []any) (int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}
