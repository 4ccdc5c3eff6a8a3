package sqlite

// This file keeps the report summaries of schema v9 (schema_v9.go): what
// the ready-made reports aggregate, per key, so that a report reads a few
// thousand summary rows instead of every record. They are kept in the
// same transaction as the records they summarize, so they are exactly as
// durable and never disagree with them: the committer adds each tool call
// and LLM call to an in-memory aggregate as it inserts it (summaryBatch),
// and writes the aggregate, one upsert per key, just before the chain's
// seal. A transaction that does not commit takes its summary changes with
// it. Retention (Prune) subtracts what it deletes and recomputes the
// maxima and rankings of the days it cut into (pruneSummaries).
//
// The summaries are derived data, not part of the hash chain: `audit
// verify` checks the records, and every report's Raw query recomputes it
// from the records (VerifySummaries compares the two).

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// slowestPerDay is how many of each day's slowest tool calls
// report_slowest keeps: the slowest report's LIMIT. The SQL spells it out
// (OFFSET 19 and 20 in qSlowFloor and qTrimSlow, LIMIT 20 in
// pruneSummaries, n <= 20 in SummaryBackfillSQL, 20 in the cold tier's
// triggers).
const slowestPerDay = 20

// maxFloorDays bounds the committer's cache of per-day ranking floors.
const maxFloorDays = 64

// Positions of the summarized columns in the values insertChained gets
// (auditchain.Tables order, without chain_seq).
var (
	tcRecordID, tcTS, tcAgent, tcTool, tcStatus, tcErrorType, tcElapsed = colIndex("tool_calls", "record_id"), colIndex("tool_calls", "ts"),
		colIndex("tool_calls", "agent_id"), colIndex("tool_calls", "tool"), colIndex("tool_calls", "status"),
		colIndex("tool_calls", "error_type"), colIndex("tool_calls", "elapsed_ms")
	lcTS, lcConv, lcProvider, lcModel, lcIn, lcOut, lcLatency, lcStatus = colIndex("llm_calls", "ts"), colIndex("llm_calls", "conversation_id"),
		colIndex("llm_calls", "provider"), colIndex("llm_calls", "model"), colIndex("llm_calls", "input_tokens"),
		colIndex("llm_calls", "output_tokens"), colIndex("llm_calls", "latency_ms"), colIndex("llm_calls", "status")
)

// colIndex returns the position of column col of chained table table.
func colIndex(table, col string) int {
	t, ok := auditchain.TableByName(table)
	if ok {
		if i := slices.Index(t.Columns, col); i >= 0 {
			return i
		}
	}
	panic("sqlite: no chained column " + table + "." + col)
}

// Summary keys and their aggregates.
type (
	toolKey   struct{ tool, agent, day string }
	toolAgg   struct{ calls, errors, elapsedSum, elapsedMax int64 }
	errKey    struct{ errorType, tool, day string }
	dayTokKey struct{ day, provider, model string }
	dayTokAgg struct{ requests, in, out int64 }
	convAgg   struct{ requests, in, out, latency, errors int64 }
)

// slowCall is a tool call as report_slowest ranks it.
type slowCall struct {
	elapsed      int64
	ts, recordID string
	day          string
}

// slower reports whether a ranks before b (slower, then earlier).
func (a slowCall) slower(b slowCall) bool {
	return cmpSlow(a, b) < 0
}

// cmpSlow orders calls as report_slowest ranks them.
func cmpSlow(a, b slowCall) int {
	if c := cmp.Compare(b.elapsed, a.elapsed); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	return cmp.Compare(a.recordID, b.recordID)
}

// floor is what the committer knows of a day's ranking: whether it holds
// slowestPerDay calls, and then the last of them.
type floor struct {
	full bool
	last slowCall
}

// summaryBatch is the summary change of the committer's transaction.
type summaryBatch struct {
	tools  map[toolKey]toolAgg
	errs   map[errKey]int64
	conv   map[string]convAgg
	dayTok map[dayTokKey]dayTokAgg
	slow   []slowCall
	// floors caches, per day, the floor of report_slowest as committed
	// (committer only; cleared whenever a transaction does not commit).
	floors map[string]floor
}

// reset empties the batch for a new transaction.
func (b *summaryBatch) reset() {
	if b.tools == nil {
		b.tools = make(map[toolKey]toolAgg)
		b.errs = make(map[errKey]int64)
		b.conv = make(map[string]convAgg)
		b.dayTok = make(map[dayTokKey]dayTokAgg)
		b.floors = make(map[string]floor)
	}
	clear(b.tools)
	clear(b.errs)
	clear(b.conv)
	clear(b.dayTok)
	b.slow = b.slow[:0]
}

// empty reports whether the batch changes no summary.
func (b *summaryBatch) empty() bool {
	return len(b.tools) == 0 && len(b.conv) == 0
}

// add records the insert of a row of table with hashed values vals.
func (b *summaryBatch) add(table string, vals []any) {
	switch table {
	case "tool_calls":
		ts := textOrEmpty(vals[tcTS])
		day := ts[:min(len(ts), 10)]
		tool := textOrEmpty(vals[tcTool])
		elapsed := asInt(vals[tcElapsed])
		isErr := textOrEmpty(vals[tcStatus]) == "error"
		k := toolKey{tool: tool, agent: textOrEmpty(vals[tcAgent]), day: day}
		a := b.tools[k]
		a.calls++
		a.elapsedSum += elapsed
		if a.calls == 1 || elapsed > a.elapsedMax {
			a.elapsedMax = elapsed
		}
		if isErr {
			a.errors++
			b.errs[errKey{errorType: textOrEmpty(vals[tcErrorType]), tool: tool, day: day}]++
		}
		b.tools[k] = a
		b.slow = append(b.slow, slowCall{elapsed: elapsed, ts: ts, recordID: textOrEmpty(vals[tcRecordID]), day: day})
	case "llm_calls":
		ts := textOrEmpty(vals[lcTS])
		in, out, latency := asInt(vals[lcIn]), asInt(vals[lcOut]), asInt(vals[lcLatency])
		conv := textOrEmpty(vals[lcConv])
		c := b.conv[conv]
		c.requests++
		c.in += in
		c.out += out
		c.latency += latency
		if textOrEmpty(vals[lcStatus]) == "error" {
			c.errors++
		}
		b.conv[conv] = c
		k := dayTokKey{day: ts[:min(len(ts), 10)], provider: textOrEmpty(vals[lcProvider]), model: textOrEmpty(vals[lcModel])}
		d := b.dayTok[k]
		d.requests++
		d.in += in
		d.out += out
		b.dayTok[k] = d
	}
}

// asInt returns v, an integer column value, as an int64.
func asInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case int32:
		return int64(v)
	}
	return 0
}

// textOrEmpty returns v, a string or nil (NULL), as text.
func textOrEmpty(v any) string {
	s, _ := v.(string)
	return s
}

// Hot summary upserts, prepared once (stmtcache.go).
const (
	qUpsertTools = `INSERT INTO report_tools (tool, agent, day, calls, errors, elapsed_sum, elapsed_max) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tool, agent, day) DO UPDATE SET calls = calls + excluded.calls, errors = errors + excluded.errors,
		elapsed_sum = elapsed_sum + excluded.elapsed_sum, elapsed_max = max(elapsed_max, excluded.elapsed_max)`
	qUpsertErrors = `INSERT INTO report_errors (error_type, tool, day, calls) VALUES (?, ?, ?, ?)
		ON CONFLICT (error_type, tool, day) DO UPDATE SET calls = calls + excluded.calls`
	qUpsertConvTokens = `INSERT INTO report_conversation_tokens (conversation, requests, input_tokens, output_tokens, latency_ms, errors) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (conversation) DO UPDATE SET requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
		output_tokens = output_tokens + excluded.output_tokens, latency_ms = latency_ms + excluded.latency_ms, errors = errors + excluded.errors`
	qUpsertDayTokens = `INSERT INTO report_day_tokens (day, provider, model, requests, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (day, provider, model) DO UPDATE SET requests = requests + excluded.requests,
		input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens`
	qInsertSlow = `INSERT INTO report_slowest (day, elapsed_ms, ts, record_id) VALUES (?, ?, ?, ?)`
	qSlowFloor  = `SELECT elapsed_ms, ts, record_id FROM report_slowest WHERE day = ?
		ORDER BY elapsed_ms DESC, ts, record_id LIMIT 1 OFFSET 19`
	qTrimSlow = `DELETE FROM report_slowest WHERE day = ?1 AND (elapsed_ms, ts, record_id) IN (
		SELECT elapsed_ms, ts, record_id FROM report_slowest WHERE day = ?1
		ORDER BY elapsed_ms DESC, ts, record_id LIMIT -1 OFFSET 20)`
)

// summaryQueries are the statements writeSummaries runs (prepared with the
// hot queries).
var summaryQueries = []string{qUpsertTools, qUpsertErrors, qUpsertConvTokens, qUpsertDayTokens, qInsertSlow, qSlowFloor, qTrimSlow}

// writeSummaries writes the transaction's summary changes, in its
// transaction: one upsert per key.
func (s *Store) writeSummaries(ctx context.Context, tx dbtx) error {
	b := &s.sums
	for k, a := range b.tools {
		if _, err := s.txExec(ctx, tx, qUpsertTools, k.tool, k.agent, k.day, a.calls, a.errors, a.elapsedSum, a.elapsedMax); err != nil {
			return fmt.Errorf("update tools summary: %w", err)
		}
	}
	for k, n := range b.errs {
		if _, err := s.txExec(ctx, tx, qUpsertErrors, k.errorType, k.tool, k.day, n); err != nil {
			return fmt.Errorf("update errors summary: %w", err)
		}
	}
	for conv, a := range b.conv {
		if _, err := s.txExec(ctx, tx, qUpsertConvTokens, conv, a.requests, a.in, a.out, a.latency, a.errors); err != nil {
			return fmt.Errorf("update conversation tokens summary: %w", err)
		}
	}
	for k, a := range b.dayTok {
		if _, err := s.txExec(ctx, tx, qUpsertDayTokens, k.day, k.provider, k.model, a.requests, a.in, a.out); err != nil {
			return fmt.Errorf("update daily tokens summary: %w", err)
		}
	}
	return s.writeSlowest(ctx, tx)
}

// writeSlowest adds the batch's calls that rank among their day's
// slowestPerDay to report_slowest. The cached floor of each day spares
// the common case, a call faster than the day's slowest, any statement.
func (s *Store) writeSlowest(ctx context.Context, tx dbtx) error {
	b := &s.sums
	if len(b.slow) == 0 {
		return nil
	}
	if len(b.floors) > maxFloorDays {
		clear(b.floors)
	}
	slices.SortFunc(b.slow, func(x, y slowCall) int {
		if c := cmp.Compare(x.day, y.day); c != 0 {
			return c
		}
		return cmpSlow(x, y)
	})
	for i := 0; i < len(b.slow); {
		day := b.slow[i].day
		j := i
		for j < len(b.slow) && b.slow[j].day == day {
			j++
		}
		calls := b.slow[i:min(j, i+slowestPerDay)] // the batch's slowest of the day
		i = j
		f, ok := b.floors[day]
		if !ok {
			var err error
			if f, err = s.readFloor(ctx, tx, day); err != nil {
				return err
			}
		}
		added := false
		for _, c := range calls {
			if f.full && !c.slower(f.last) {
				break // calls is sorted: no later one ranks either
			}
			if _, err := s.txExec(ctx, tx, qInsertSlow, day, c.elapsed, c.ts, c.recordID); err != nil {
				return fmt.Errorf("update slowest calls summary: %w", err)
			}
			added = true
		}
		if added {
			if _, err := s.txExec(ctx, tx, qTrimSlow, day); err != nil {
				return fmt.Errorf("update slowest calls summary: %w", err)
			}
			var err error
			if f, err = s.readFloor(ctx, tx, day); err != nil {
				return err
			}
		}
		b.floors[day] = f
	}
	return nil
}

// readFloor reads the floor of day's ranking.
func (s *Store) readFloor(ctx context.Context, tx dbtx, day string) (floor, error) {
	var f floor
	err := s.txQueryRow(ctx, tx, qSlowFloor, day).Scan(&f.last.elapsed, &f.last.ts, &f.last.recordID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return floor{}, nil
	case err != nil:
		return f, fmt.Errorf("read slowest calls summary: %w", err)
	}
	f.full = true
	return f, nil
}

// dayBounds returns the Unix milliseconds of the start of day (YYYY-MM-DD,
// UTC) and of the next day.
func dayBounds(day string) (int64, int64, bool) {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return 0, 0, false
	}
	return t.UnixMilli(), t.AddDate(0, 0, 1).UnixMilli(), true
}

// pruneSummaries takes the tool calls and LLM calls with chain_seq <= upTo
// out of the summaries, in the transaction that deletes them (tx), before
// deleting them. Counts and sums are subtracted; the maxima and the
// rankings of the days the prune cuts into are recomputed from the rows of
// those days that stay (afterPrune). Keys left with no rows go.
func (s *Store) pruneSummaries(ctx context.Context, tx dbtx, upTo int64) (func() error, error) {
	steps := []string{
		`UPDATE report_tools SET calls = report_tools.calls - d.calls, errors = report_tools.errors - d.errors,
			elapsed_sum = report_tools.elapsed_sum - d.elapsed_sum
		FROM (SELECT tool, coalesce(agent_id, '') AS agent, substr(ts, 1, 10) AS day, count(*) AS calls,
				sum(status = 'error') AS errors, sum(elapsed_ms) AS elapsed_sum
			FROM tool_calls WHERE chain_seq <= ?1 GROUP BY 1, 2, 3) AS d
		WHERE report_tools.tool = d.tool AND report_tools.agent = d.agent AND report_tools.day = d.day`,
		`UPDATE report_errors SET calls = report_errors.calls - d.calls
		FROM (SELECT coalesce(error_type, '') AS error_type, tool, substr(ts, 1, 10) AS day, count(*) AS calls
			FROM tool_calls WHERE chain_seq <= ?1 AND status = 'error' GROUP BY 1, 2, 3) AS d
		WHERE report_errors.error_type = d.error_type AND report_errors.tool = d.tool AND report_errors.day = d.day`,
		`UPDATE report_conversation_tokens SET requests = report_conversation_tokens.requests - d.requests,
			input_tokens = report_conversation_tokens.input_tokens - d.input_tokens,
			output_tokens = report_conversation_tokens.output_tokens - d.output_tokens,
			latency_ms = report_conversation_tokens.latency_ms - d.latency_ms, errors = report_conversation_tokens.errors - d.errors
		FROM (SELECT coalesce(conversation_id, '') AS conversation, count(*) AS requests,
				sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(latency_ms) AS latency_ms,
				sum(status = 'error') AS errors
			FROM llm_calls WHERE chain_seq <= ?1 GROUP BY 1) AS d
		WHERE report_conversation_tokens.conversation = d.conversation`,
		`UPDATE report_day_tokens SET requests = report_day_tokens.requests - d.requests,
			input_tokens = report_day_tokens.input_tokens - d.input_tokens, output_tokens = report_day_tokens.output_tokens - d.output_tokens
		FROM (SELECT substr(ts, 1, 10) AS day, provider, coalesce(model, '') AS model, count(*) AS requests,
				sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
			FROM llm_calls WHERE chain_seq <= ?1 GROUP BY 1, 2, 3) AS d
		WHERE report_day_tokens.day = d.day AND report_day_tokens.provider = d.provider AND report_day_tokens.model = d.model`,
	}
	// The buckets whose maximum may go with the deleted rows, and the days
	// whose ranking loses a call, are recomputed once the rows are gone.
	type bucket struct {
		k   toolKey
		max int64
	}
	// What the transaction added before the prune is written first, so
	// that what the prune subtracts is there to subtract.
	if err := s.writeSummaries(ctx, tx); err != nil {
		return nil, err
	}
	s.sums.reset()
	var maxima []bucket
	rows, err := tx.QueryContext(ctx, `SELECT tool, coalesce(agent_id, ''), substr(ts, 1, 10), max(elapsed_ms)
		FROM tool_calls WHERE chain_seq <= ? GROUP BY 1, 2, 3`, upTo)
	if err != nil {
		return nil, fmt.Errorf("prune summaries: %w", err)
	}
	for rows.Next() {
		var b bucket
		if err := rows.Scan(&b.k.tool, &b.k.agent, &b.k.day, &b.max); err != nil {
			rows.Close()
			return nil, fmt.Errorf("prune summaries: %w", err)
		}
		maxima = append(maxima, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("prune summaries: %w", err)
	}
	days, err := stringColumn(ctx, tx, `SELECT DISTINCT s.day FROM report_slowest AS s JOIN tool_calls AS t ON t.record_id = s.record_id
		WHERE t.chain_seq <= ?`, upTo)
	if err != nil {
		return nil, fmt.Errorf("prune summaries: %w", err)
	}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q, upTo); err != nil {
			return nil, fmt.Errorf("prune summaries: %w", err)
		}
	}
	clear(s.sums.floors) // the rankings change
	after := func() error {
		for _, q := range []string{
			`DELETE FROM report_tools WHERE calls <= 0`,
			`DELETE FROM report_errors WHERE calls <= 0`,
			`DELETE FROM report_conversation_tokens WHERE requests <= 0`,
			`DELETE FROM report_day_tokens WHERE requests <= 0`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("prune summaries: %w", err)
			}
		}
		// A bucket whose maximum was among the deleted rows needs it
		// recomputed from the rows left; one pass over such a day's rows
		// (found by ts_ms, indexed) recomputes every bucket of the day.
		stale := map[string]bool{}
		for _, b := range maxima {
			if stale[b.k.day] {
				continue
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM report_tools WHERE tool = ? AND agent = ? AND day = ? AND elapsed_max <= ?`,
				b.k.tool, b.k.agent, b.k.day, b.max).Scan(&n); err != nil {
				return fmt.Errorf("prune summaries: %w", err)
			}
			stale[b.k.day] = n > 0
		}
		for day, ok := range stale {
			if !ok {
				continue
			}
			lo, hi, ok := dayBounds(day)
			if !ok {
				lo, hi = 0, 1<<62
			}
			if _, err := tx.ExecContext(ctx, `UPDATE report_tools SET elapsed_max = m.elapsed_max
				FROM (SELECT tool, coalesce(agent_id, '') AS agent, max(elapsed_ms) AS elapsed_max FROM tool_calls
					WHERE ts_ms >= ?2 AND ts_ms < ?3 AND substr(ts, 1, 10) = ?1 GROUP BY 1, 2) AS m
				WHERE report_tools.day = ?1 AND report_tools.tool = m.tool AND report_tools.agent = m.agent`,
				day, lo, hi); err != nil {
				return fmt.Errorf("prune summaries: %w", err)
			}
		}
		for _, day := range days {
			lo, hi, ok := dayBounds(day)
			if !ok {
				lo, hi = 0, 1<<62
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM report_slowest WHERE day = ?`, day); err != nil {
				return fmt.Errorf("prune summaries: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO report_slowest (day, elapsed_ms, ts, record_id)
				SELECT ?1, elapsed_ms, ts, record_id FROM tool_calls WHERE ts_ms >= ?2 AND ts_ms < ?3 AND substr(ts, 1, 10) = ?1
				ORDER BY elapsed_ms DESC, ts, record_id LIMIT 20`, day, lo, hi); err != nil {
				return fmt.Errorf("prune summaries: %w", err)
			}
		}
		return nil
	}
	return after, nil
}

// stringColumn runs q and returns its one text column.
func stringColumn(ctx context.Context, q queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// execer is what RebuildSummaries needs from *sql.DB, *sql.Conn and *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// RebuildSummaries recomputes the report summaries of the warm-schema
// database behind db from its tool_calls and llm_calls rows. It is for a
// database filled other than through a Store (the merged view of the tiers
// MergeTiers builds); run it in a transaction to make it all or nothing.
func RebuildSummaries(ctx context.Context, db execer) error {
	if _, err := db.ExecContext(ctx, `DELETE FROM report_tools; DELETE FROM report_errors; DELETE FROM report_slowest;
		DELETE FROM report_conversation_tokens; DELETE FROM report_day_tokens;`+SummaryBackfillSQL); err != nil {
		return fmt.Errorf("rebuild report summaries: %w", err)
	}
	return nil
}

// ErrSummaryMismatch reports a report summary that does not match the
// records it summarizes.
var ErrSummaryMismatch = errors.New("report summary does not match the records")

// VerifySummaries runs every report that reads the summaries both ways,
// from the summaries (Query) and from the records alone (Raw), on the
// database at path, read-only and in one read transaction (a snapshot: a
// node writing meanwhile cannot make them differ), and fails with
// ErrSummaryMismatch naming the first report whose answers differ. It
// streams both answers side by side and reads every record, so it costs
// what the reports cost before the summaries.
func VerifySummaries(ctx context.Context, path string) error {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return fmt.Errorf("verify summaries: %w", err)
	}
	defer closeConn()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("verify summaries: %w", err)
	}
	defer tx.Rollback() // read only: nothing to keep
	for _, r := range Reports {
		if r.Raw == "" || r.Arg != "" {
			continue
		}
		row, same, err := sameAnswers(ctx, tx, r.Query, r.Raw)
		switch {
		case err != nil:
			return fmt.Errorf("verify summaries: report %s: %w", r.Name, classifyReadError(err))
		case !same:
			return fmt.Errorf("%w: report %s differs at row %d", ErrSummaryMismatch, r.Name, row+1)
		}
	}
	return nil
}

// sameAnswers runs queries a and b in tx and compares their rows as they
// come (SameRows), returning the first row that differs.
func sameAnswers(ctx context.Context, tx dbtx, a, b string) (int, bool, error) {
	ra, err := tx.QueryContext(ctx, a)
	if err != nil {
		return 0, false, err
	}
	defer ra.Close()
	rb, err := tx.QueryContext(ctx, b)
	if err != nil {
		return 0, false, err
	}
	defer rb.Close()
	cols, err := ra.Columns()
	if err != nil {
		return 0, false, err
	}
	x, y := make([]any, len(cols)), make([]any, len(cols))
	px, py := make([]any, len(cols)), make([]any, len(cols))
	for i := range cols {
		px[i], py[i] = &x[i], &y[i]
	}
	for i := 0; ; i++ {
		na, nb := ra.Next(), rb.Next()
		if !na || !nb {
			if err := errors.Join(ra.Err(), rb.Err()); err != nil {
				return i, false, err
			}
			return i, na == nb, nil
		}
		if err := errors.Join(ra.Scan(px...), rb.Scan(py...)); err != nil {
			return i, false, err
		}
		if _, same := SameRows(&Result{Rows: [][]any{x}}, &Result{Rows: [][]any{y}}); !same {
			return i, false, nil
		}
	}
}

// SameRows compares two report results cell by cell; a comma-separated
// list (group_concat) compares as a set of names. It returns the first
// row that differs.
func SameRows(a, b *Result) (int, bool) {
	n := max(len(a.Rows), len(b.Rows))
	for i := range n {
		if i >= len(a.Rows) || i >= len(b.Rows) || len(a.Rows[i]) != len(b.Rows[i]) {
			return i, false
		}
		for j := range a.Rows[i] {
			x, y := a.Rows[i][j], b.Rows[i][j]
			if xs, ok := x.(string); ok {
				if ys, ok := y.(string); ok && strings.Contains(xs, ",") {
					xl, yl := strings.Split(xs, ","), strings.Split(ys, ",")
					slices.Sort(xl)
					slices.Sort(yl)
					if !slices.Equal(xl, yl) {
						return i, false
					}
					continue
				}
			}
			if fmt.Sprintf("%T %v", x, x) != fmt.Sprintf("%T %v", y, y) {
				return i, false
			}
		}
	}
	return 0, true
}
