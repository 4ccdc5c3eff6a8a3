package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// benchRows is the size of the tool_calls table the report benchmarks run on.
const benchRows = 1_000_000

// buildReportDB writes a warm database with benchRows tool calls and
// benchRows/10 LLM calls and messages, spread over 30 days, 20 tools, 10
// agents and 10,000 conversations, straight through SQL (the chain columns
// stay NULL; the reports do not read them).
func buildReportDB(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "audit.db")
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	stmts := []string{
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d)
		INSERT INTO tool_calls (record_id, ts, ts_ms, node, side, conversation_id, request_id, agent_id, tool, params, status, error_type, elapsed_ms, result_bytes)
		SELECT printf('%%032x', i), strftime('%%Y-%%m-%%dT%%H:%%M:%%f000000Z', (%d + i*2592) / 1000.0, 'unixepoch'), %d + i*2592, 'n1', 'orchestrator',
			'conv-' || (i %% 10000), 'req-' || i, 'edge-' || (i %% 10), 'tool-' || (i %% 20), json_object('n', i),
			CASE WHEN i %% 17 = 0 THEN 'error' ELSE 'success' END,
			CASE WHEN i %% 17 = 0 THEN (CASE WHEN i %% 2 = 0 THEN 'timeout' ELSE 'execution_failed' END) END,
			i %% 1000, 100 FROM n`, benchRows, start, start),
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d)
		INSERT INTO llm_calls (record_id, ts, ts_ms, node, conversation_id, provider, model, input_tokens, output_tokens, latency_ms, status, iteration)
		SELECT printf('l%%031x', i), strftime('%%Y-%%m-%%dT%%H:%%M:%%f000000Z', (%d + i*25920) / 1000.0, 'unixepoch'), %d + i*25920, 'n1',
			'conv-' || (i %% 10000), 'openai', 'model-' || (i %% 3), 100 + i %% 500, 10 + i %% 50, i %% 2000, 'success', i %% 5 FROM n`, benchRows/10, start, start),
		`INSERT INTO conversations (conversation_id, first_ts, first_ms, last_ts, last_ms, message_count)
		SELECT DISTINCT conversation_id, '', 0, '', 0, 0 FROM llm_calls`,
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d)
		INSERT INTO messages (record_id, conversation_id, seq, ts, ts_ms, role, body)
		SELECT printf('m%%031x', i), 'conv-' || (i %% 10000), i / 10000 + 1, strftime('%%Y-%%m-%%dT%%H:%%M:%%f000000Z', (%d + i*25920) / 1000.0, 'unixepoch'),
			%d + i*25920, 'user', json_object('role', 'user', 'content', 'message ' || i) FROM n`, benchRows/10, start, start),
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("build benchmark database: %v", err)
		}
	}
	// The rows went in around the Store: build their summaries as the
	// v9 migration does for the rows of an upgraded database.
	if err := RebuildSummaries(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReports times each ready-made report over a warm database of
// one million tool calls (and 100,000 LLM calls and messages), through the
// same read-only path `evoclaw audit report` uses. Each report's Raw query,
// which computes it from the records alone (the cold tier's way), is timed
// beside it as NAME/raw.
func BenchmarkReports(b *testing.B) {
	path := buildReportDB(b)
	for _, r := range Reports {
		var args []any
		if r.Arg != "" {
			args = append(args, "conv-42")
		}
		if r.Name == "job-runs" {
			continue // the benchmark database holds no events
		}
		run := func(name, q string) {
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					res, err := QueryReadOnly(context.Background(), path, q, args...)
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Rows) == 0 {
						b.Fatal("report returned no rows")
					}
				}
			})
		}
		run(r.Name, r.Query)
		if r.Raw != "" {
			run(r.Name+"/raw", r.Raw)
		}
	}
}

// BenchmarkVerifyChain measures `audit verify` on the warm store: records
// verified per second over a chain of 20,000 records of every kind.
func BenchmarkVerifyChain(b *testing.B) {
	s, path := openStore(b, Options{})
	fillMixed(b, s, 4000) // 20,000 records
	var verified int64
	for b.Loop() {
		rep, err := VerifyChain(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		verified += rep.Verified
	}
	b.ReportMetric(float64(verified)/b.Elapsed().Seconds(), "records/s")
}
