package sqlite

// migrationV9 adds the report summaries (summary.go) and drops the two
// indexes only the old whole-table reports used. Each summary table holds,
// per key, what a ready-made report aggregates, kept up to date in the
// same transaction as the records it summarizes; the migration builds them
// from the rows the database already holds, in the migration's
// transaction, so an upgraded database's summaries match its rows.
//
// Keys carry the UTC day (substr(ts, 1, 10)) where a report needs a
// maximum or a ranking: retention removes the oldest records, and a
// maximum or a top-N cannot be subtracted, so the buckets of the days a
// prune touched are recomputed from the rows left (summary.go).
//
// report_slowest keeps, per day, the slowestPerDay slowest calls (by
// elapsed_ms, then ts, then record_id): the overall slowest are among them.
const migrationV9 = `DROP INDEX tool_calls_agent_tool;
	DROP INDEX llm_calls_model;
	` + SummaryTablesSQL + SummaryBackfillSQL

// SummaryTablesSQL creates the report summary tables. The cold tier
// creates the same ones (its schema v3), so the reports run there
// unchanged. Part of migration v9: never change it, append a migration.
const SummaryTablesSQL = `CREATE TABLE report_tools (
		tool TEXT NOT NULL,
		agent TEXT NOT NULL,
		day TEXT NOT NULL,
		calls INTEGER NOT NULL,
		errors INTEGER NOT NULL,
		elapsed_sum INTEGER NOT NULL,
		elapsed_max INTEGER NOT NULL,
		PRIMARY KEY (tool, agent, day)
	) WITHOUT ROWID;
	CREATE TABLE report_errors (
		error_type TEXT NOT NULL,
		tool TEXT NOT NULL,
		day TEXT NOT NULL,
		calls INTEGER NOT NULL,
		PRIMARY KEY (error_type, tool, day)
	) WITHOUT ROWID;
	CREATE TABLE report_slowest (
		day TEXT NOT NULL,
		elapsed_ms INTEGER NOT NULL,
		ts TEXT NOT NULL,
		record_id TEXT NOT NULL,
		PRIMARY KEY (day, elapsed_ms, ts, record_id)
	) WITHOUT ROWID;
	CREATE TABLE report_conversation_tokens (
		conversation TEXT NOT NULL PRIMARY KEY,
		requests INTEGER NOT NULL,
		input_tokens INTEGER NOT NULL,
		output_tokens INTEGER NOT NULL,
		latency_ms INTEGER NOT NULL,
		errors INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE TABLE report_day_tokens (
		day TEXT NOT NULL,
		provider TEXT NOT NULL,
		model TEXT NOT NULL,
		requests INTEGER NOT NULL,
		input_tokens INTEGER NOT NULL,
		output_tokens INTEGER NOT NULL,
		PRIMARY KEY (day, provider, model)
	) WITHOUT ROWID;
	`

// SummaryBackfillSQL fills the empty summary tables from the rows of
// tool_calls and llm_calls (migration v9, RebuildSummaries, and the cold
// tier's schema v3). Part of migration v9: never change it.
const SummaryBackfillSQL = `INSERT INTO report_tools (tool, agent, day, calls, errors, elapsed_sum, elapsed_max)
	SELECT tool, coalesce(agent_id, ''), substr(ts, 1, 10), count(*), sum(status = 'error'), sum(elapsed_ms), max(elapsed_ms)
	FROM tool_calls GROUP BY 1, 2, 3;
	INSERT INTO report_errors (error_type, tool, day, calls)
	SELECT coalesce(error_type, ''), tool, substr(ts, 1, 10), count(*)
	FROM tool_calls WHERE status = 'error' GROUP BY 1, 2, 3;
	INSERT INTO report_slowest (day, elapsed_ms, ts, record_id)
	SELECT day, elapsed_ms, ts, record_id FROM (
		SELECT substr(ts, 1, 10) AS day, elapsed_ms, ts, record_id,
			row_number() OVER (PARTITION BY substr(ts, 1, 10) ORDER BY elapsed_ms DESC, ts, record_id) AS n
		FROM tool_calls)
	WHERE n <= 20;
	INSERT INTO report_conversation_tokens (conversation, requests, input_tokens, output_tokens, latency_ms, errors)
	SELECT coalesce(conversation_id, ''), count(*), sum(input_tokens), sum(output_tokens), sum(latency_ms), sum(status = 'error')
	FROM llm_calls GROUP BY 1;
	INSERT INTO report_day_tokens (day, provider, model, requests, input_tokens, output_tokens)
	SELECT substr(ts, 1, 10), provider, coalesce(model, ''), count(*), sum(input_tokens), sum(output_tokens)
	FROM llm_calls GROUP BY 1, 2, 3;`
