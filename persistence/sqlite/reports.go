package sqlite

import (
	"context"
	"fmt"
)

// Report is a ready-made audit query; docs/AUDIT.md shows it. Query runs
// on the warm store and on the merged view of both tiers: the aggregating
// reports read the summaries the store keeps as records are written
// (summary.go). Raw, when set, computes the same answer from the records
// themselves: the cold tier, which keeps no summaries, runs it, and it
// checks the summaries (VerifySummaries).
type Report struct {
	Name  string // as given to `evoclaw audit report NAME`
	Doc   string // one line: what it answers
	Arg   string // the name of its one parameter (?1), empty when none
	Query string // the SQL, one statement
	Raw   string // the same report over the records alone; empty when Query reads only records
}

// RawQuery returns the report's SQL over the records alone: Raw, or Query
// when the report reads nothing else.
func (r Report) RawQuery() string {
	if r.Raw != "" {
		return r.Raw
	}
	return r.Query
}

// Reports are the ready-made audit queries, in documentation order.
var Reports = []Report{
	{Name: "tools", Doc: "calls, errors and latency per tool and agent", Query: `SELECT tool, agent, sum(calls) AS calls,
  sum(errors) AS errors,
  round(100.0 * sum(errors) / sum(calls), 1) AS error_pct,
  round(1.0 * sum(elapsed_sum) / sum(calls), 1) AS avg_ms, max(elapsed_max) AS max_ms
FROM report_tools
GROUP BY tool, agent
ORDER BY calls DESC, tool, agent`, Raw: `SELECT tool, coalesce(agent_id, '') AS agent, count(*) AS calls,
  sum(status = 'error') AS errors,
  round(100.0 * sum(status = 'error') / count(*), 1) AS error_pct,
  round(avg(elapsed_ms), 1) AS avg_ms, max(elapsed_ms) AS max_ms
FROM tool_calls
GROUP BY tool, agent
ORDER BY calls DESC, tool, agent`},
	{Name: "errors", Doc: "failed tool calls by error type", Query: `SELECT error_type, sum(calls) AS calls,
  round(100.0 * sum(calls) / (SELECT sum(calls) FROM report_tools), 1) AS pct_of_all_calls,
  group_concat(tool) AS tools
FROM (SELECT error_type, tool, sum(calls) AS calls FROM report_errors GROUP BY error_type, tool ORDER BY error_type, tool)
GROUP BY error_type
ORDER BY calls DESC, error_type`, Raw: `SELECT coalesce(error_type, '') AS error_type, count(*) AS calls,
  round(100.0 * count(*) / (SELECT count(*) FROM tool_calls), 1) AS pct_of_all_calls,
  group_concat(DISTINCT tool) AS tools
FROM tool_calls
WHERE status = 'error'
GROUP BY error_type
ORDER BY calls DESC, error_type`},
	{Name: "slowest", Doc: "the 20 slowest tool calls", Query: `SELECT t.ts, t.tool, coalesce(t.agent_id, '') AS agent, t.elapsed_ms, t.status,
  coalesce(t.error_type, '') AS error_type, coalesce(t.request_id, '') AS request_id
FROM (SELECT record_id FROM report_slowest ORDER BY elapsed_ms DESC, ts, record_id LIMIT 20) AS s
JOIN tool_calls AS t ON t.record_id = s.record_id
ORDER BY t.elapsed_ms DESC, t.ts, t.record_id`, Raw: `SELECT ts, tool, coalesce(agent_id, '') AS agent, elapsed_ms, status,
  coalesce(error_type, '') AS error_type, coalesce(request_id, '') AS request_id
FROM tool_calls
ORDER BY elapsed_ms DESC, ts, record_id
LIMIT 20`},
	{Name: "tokens-by-conversation", Doc: "LLM requests, tokens and latency per conversation", Query: `SELECT conversation, requests, input_tokens, output_tokens,
  input_tokens + output_tokens AS total_tokens, latency_ms, errors
FROM report_conversation_tokens
ORDER BY total_tokens DESC, conversation`, Raw: `SELECT coalesce(conversation_id, '') AS conversation, count(*) AS requests,
  sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(input_tokens + output_tokens) AS total_tokens, sum(latency_ms) AS latency_ms,
  sum(status = 'error') AS errors
FROM llm_calls
GROUP BY conversation
ORDER BY total_tokens DESC, conversation`},
	{Name: "tokens-by-day", Doc: "LLM requests and tokens per UTC day, provider and model", Query: `SELECT day, provider, model, requests, input_tokens, output_tokens
FROM report_day_tokens
ORDER BY day, provider, model`, Raw: `SELECT substr(ts, 1, 10) AS day, provider, coalesce(model, '') AS model,
  count(*) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
FROM llm_calls
GROUP BY day, provider, model
ORDER BY day, provider, model`},
	{Name: "job-runs", Doc: "did a scheduled job run on every agent, day by day", Arg: "job", Query: `SELECT substr(json_extract(detail, '$.scheduled'), 1, 10) AS day, coalesce(agent_id, '') AS agent,
  group_concat(json_extract(detail, '$.outcome')) AS outcomes,
  sum(json_extract(detail, '$.outcome') = 'succeeded') AS succeeded,
  coalesce(group_concat(CASE WHEN json_extract(detail, '$.outcome') <> 'succeeded'
    THEN json_extract(detail, '$.error') END, ' | '), '') AS problems
FROM events
WHERE kind = 'job_run' AND json_extract(detail, '$.job') = ?1
GROUP BY day, agent
ORDER BY day, agent`},
	{Name: "calls", Doc: "every tool call of one conversation: what ran, where, its result, and the model turn and approval behind it", Arg: "conversation_id", Query: `WITH asked AS (
  SELECT m.chain_seq, m.seq, json_extract(c.value, '$.id') AS call_id,
    (SELECT l.iteration FROM llm_calls AS l WHERE l.conversation_id = ?1 AND l.status = 'success' AND l.chain_seq < m.chain_seq
     ORDER BY l.chain_seq DESC LIMIT 1) AS llm_turn
  FROM messages AS m, json_each(m.body, '$.tool_calls') AS c
  WHERE m.conversation_id = ?1 AND m.role = 'assistant'),
matched AS (
  SELECT t.record_id, a.seq, a.llm_turn,
    row_number() OVER (PARTITION BY t.record_id ORDER BY a.chain_seq DESC) AS n
  FROM tool_calls AS t JOIN asked AS a ON a.call_id = t.call_id AND a.chain_seq < t.chain_seq
  WHERE t.conversation_id = ?1),
decided AS (
  SELECT json_extract(detail, '$.request_id') AS request_id,
    coalesce(json_extract(detail, '$.state'), '') || CASE json_extract(detail, '$.by')
      WHEN 'timeout' THEN ': nobody decided in time' WHEN 'restart' THEN ': the node restarted'
      WHEN 'canceled' THEN ': the chat ended first' ELSE ' by ' || coalesce(json_extract(detail, '$.by'), '') END AS approval
  FROM events WHERE kind = 'approval_decided' AND json_extract(detail, '$.conversation_id') = ?1)
SELECT t.ts, t.side, t.tool, coalesce(t.agent_id, '') AS agent, t.params, t.status, coalesce(t.error_type, '') AS error_type,
  t.exit_code, t.elapsed_ms, coalesce(t.request_id, '') AS request_id,
  m.seq AS asked_in_message, m.llm_turn, coalesce(d.approval, '') AS approval
FROM tool_calls AS t
LEFT JOIN matched AS m ON m.record_id = t.record_id AND m.n = 1
LEFT JOIN decided AS d ON d.request_id = t.request_id
WHERE t.conversation_id = ?1
ORDER BY t.chain_seq`},
	{Name: "conversation", Doc: "everything one conversation did, in order: messages, LLM and tool calls, approvals, sub-agents, job runs", Arg: "conversation_id", Query: `SELECT ts, 'message' AS kind, role AS name,
  coalesce(json_extract(body, '$.content'), '') AS detail, chain_seq
FROM messages WHERE conversation_id = ?1
UNION ALL
SELECT ts, 'llm', provider || '/' || coalesce(model, ''),
  status || ' ' || input_tokens || '+' || output_tokens || ' tokens ' || latency_ms || 'ms', chain_seq
FROM llm_calls WHERE conversation_id = ?1
UNION ALL
SELECT ts, 'tool', tool,
  status || ' ' || elapsed_ms || 'ms' || coalesce(' ' || error_type, '') || coalesce(' agent=' || agent_id, ''), chain_seq
FROM tool_calls WHERE conversation_id = ?1
UNION ALL
SELECT ts, 'event', kind, CASE kind
    WHEN 'approval_requested' THEN coalesce(json_extract(detail, '$.tool'), '') || ' ' ||
      coalesce(json_extract(detail, '$.request_id'), '') || ': ' || coalesce(json_extract(detail, '$.reason'), '')
    WHEN 'approval_decided' THEN coalesce(json_extract(detail, '$.state'), '') || CASE json_extract(detail, '$.by')
      WHEN 'timeout' THEN ': nobody decided in time' WHEN 'restart' THEN ': the node restarted'
      WHEN 'canceled' THEN ': the chat ended first' ELSE ' by ' || coalesce(json_extract(detail, '$.by'), '') END ||
      ' after ' || coalesce(json_extract(detail, '$.waited_ms'), '') || 'ms: ' || coalesce(json_extract(detail, '$.tool'), '') ||
      ' ' || coalesce(json_extract(detail, '$.request_id'), '')
    WHEN 'session_spawned' THEN CASE WHEN json_extract(detail, '$.child') = ?1
      THEN 'spawned by ' || coalesce(json_extract(detail, '$.parent'), '')
      ELSE 'spawned ' || coalesce(json_extract(detail, '$.child'), '') END
    WHEN 'job_run_started' THEN 'job ' || coalesce(json_extract(detail, '$.job'), '') || ' ' || coalesce(json_extract(detail, '$.trigger'), '')
    WHEN 'job_run' THEN 'job ' || coalesce(json_extract(detail, '$.job'), '') || ' ' || coalesce(json_extract(detail, '$.outcome'), '')
    ELSE coalesce(detail, '') END, chain_seq
FROM events WHERE ?1 IN (json_extract(detail, '$.conversation_id'), json_extract(detail, '$.parent'), json_extract(detail, '$.child'))
ORDER BY ts, chain_seq`},
}

// ReportByName returns the report called name.
func ReportByName(name string) (Report, bool) {
	for _, r := range Reports {
		if r.Name == name {
			return r, true
		}
	}
	return Report{}, false
}

// summariesVersion is the first schema version with the report summaries.
const summariesVersion = 9

// ReportSQL returns the SQL to run r on the warm database at path, which
// read-only commands read as it is, without upgrading it: r.Query where
// the database has the report summaries (schema v9 on), r.RawQuery() on
// an older one.
func ReportSQL(ctx context.Context, path string, r Report) (string, error) {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return "", fmt.Errorf("query audit database: %w", err)
	}
	defer closeConn()
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return "", fmt.Errorf("read schema version: %w", classifyReadError(err))
	}
	if version < summariesVersion {
		return r.RawQuery(), nil
	}
	return r.Query, nil
}
