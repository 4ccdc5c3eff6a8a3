-- Generated from the migrations in schema*.go by TestFreshSchemaIsTheMigratedOne -update: do not edit.
CREATE TABLE tool_calls (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		side TEXT NOT NULL CHECK(side IN ('orchestrator','edge')),
		conversation_id TEXT,
		request_id TEXT,
		call_id TEXT,
		agent_id TEXT,
		tool TEXT NOT NULL,
		params TEXT CHECK(params IS NULL OR json_valid(params)),
		status TEXT NOT NULL CHECK(status IN ('success','error')),
		error_type TEXT,
		error TEXT,
		exit_code INTEGER,
		elapsed_ms INTEGER NOT NULL,
		result_excerpt TEXT,
		result_bytes INTEGER NOT NULL
	, chain_seq INTEGER, hash TEXT, agent_elapsed_ms INTEGER CHECK(agent_elapsed_ms IS NULL OR agent_elapsed_ms >= 0));
CREATE INDEX tool_calls_ts_ms ON tool_calls(ts_ms);
CREATE INDEX tool_calls_request_id ON tool_calls(request_id);
CREATE INDEX tool_calls_conversation_id ON tool_calls(conversation_id);
CREATE TABLE request_log (
		request_id TEXT PRIMARY KEY,
		state TEXT NOT NULL,
		report BLOB,
		started_ms INTEGER NOT NULL,
		finished_ms INTEGER
	, tool TEXT, params TEXT, conversation_id TEXT, pgid INTEGER, pgid_start INTEGER, boot_id TEXT, report_bytes INTEGER NOT NULL DEFAULT 0 CHECK(report_bytes >= 0), held_bytes INTEGER NOT NULL DEFAULT 0 CHECK(held_bytes >= 0), status TEXT, error_type TEXT, result_bytes INTEGER, report_sha256 TEXT);
CREATE TABLE llm_calls (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		conversation_id TEXT,
		provider TEXT NOT NULL,
		model TEXT,
		input_tokens INTEGER NOT NULL CHECK(input_tokens >= 0),
		output_tokens INTEGER NOT NULL CHECK(output_tokens >= 0),
		latency_ms INTEGER NOT NULL CHECK(latency_ms >= 0),
		status TEXT NOT NULL CHECK(status IN ('success','error')),
		error_type TEXT,
		error TEXT,
		iteration INTEGER NOT NULL CHECK(iteration >= 0)
	, chain_seq INTEGER, hash TEXT);
CREATE INDEX llm_calls_ts_ms ON llm_calls(ts_ms);
CREATE INDEX llm_calls_conversation_id ON llm_calls(conversation_id);
CREATE TABLE conversations (
		conversation_id TEXT PRIMARY KEY,
		first_ts TEXT NOT NULL,
		first_ms INTEGER NOT NULL,
		last_ts TEXT NOT NULL,
		last_ms INTEGER NOT NULL,
		message_count INTEGER NOT NULL CHECK(message_count >= 0)
	);
CREATE INDEX conversations_last_ms ON conversations(last_ms);
CREATE TABLE messages (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		conversation_id TEXT NOT NULL REFERENCES conversations(conversation_id),
		seq INTEGER NOT NULL CHECK(seq >= 1),
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		role TEXT NOT NULL,
		body TEXT NOT NULL CHECK(json_valid(body)), chain_seq INTEGER, hash TEXT,
		UNIQUE(conversation_id, seq)
	);
CREATE INDEX messages_ts_ms ON messages(ts_ms);
CREATE TABLE events (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		agent_id TEXT,
		kind TEXT NOT NULL,
		detail TEXT CHECK(detail IS NULL OR json_valid(detail))
	, chain_seq INTEGER, hash TEXT);
CREATE INDEX events_ts_ms ON events(ts_ms);
CREATE INDEX events_agent_kind ON events(agent_id, kind);
CREATE UNIQUE INDEX tool_calls_chain_seq ON tool_calls(chain_seq);
CREATE UNIQUE INDEX llm_calls_chain_seq ON llm_calls(chain_seq);
CREATE UNIQUE INDEX messages_chain_seq ON messages(chain_seq);
CREATE UNIQUE INDEX events_chain_seq ON events(chain_seq);
CREATE TABLE audit_meta (
		key TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);
CREATE TABLE chain_checkpoints (
		id INTEGER PRIMARY KEY,
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		ts TEXT NOT NULL,
		deleted INTEGER NOT NULL,
		reason TEXT NOT NULL
	, mac TEXT);
CREATE TABLE cold_shipped (
		id INTEGER PRIMARY KEY CHECK(id = 1),
		shipped_seq INTEGER NOT NULL,
		ts TEXT NOT NULL
	);
CREATE TABLE outbox (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		topic TEXT NOT NULL,
		payload BLOB NOT NULL,
		queued_ms INTEGER NOT NULL
	);
CREATE TABLE chain_seal (
		id INTEGER PRIMARY KEY CHECK(id = 1),
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		mac TEXT NOT NULL
	);
CREATE TABLE jobs (
		job_id TEXT PRIMARY KEY,
		source TEXT NOT NULL CHECK(source IN ('config','api','model')),
		spec TEXT NOT NULL CHECK(json_valid(spec)),
		paused INTEGER NOT NULL CHECK(paused IN (0,1)),
		created_ms INTEGER NOT NULL,
		updated_ms INTEGER NOT NULL,
		watermark_ms INTEGER
	);
CREATE TABLE job_runs (
		id INTEGER PRIMARY KEY,
		job_id TEXT NOT NULL,
		scheduled_ms INTEGER NOT NULL,
		agent_id TEXT NOT NULL,
		trigger TEXT NOT NULL CHECK(trigger IN ('schedule','catch_up','run_now')),
		outcome TEXT CHECK(outcome IS NULL OR outcome IN ('succeeded','failed','timed_out','skipped','missed')),
		conversation_id TEXT,
		started_ms INTEGER,
		finished_ms INTEGER,
		error TEXT,
		missed INTEGER NOT NULL DEFAULT 0,
		UNIQUE(job_id, scheduled_ms, agent_id)
	);
CREATE INDEX job_runs_running ON job_runs(outcome) WHERE outcome IS NULL;
CREATE TABLE approvals (
		approval_id TEXT PRIMARY KEY,
		state TEXT NOT NULL CHECK(state IN ('pending','approved','denied','timed_out','canceled')),
		conversation_id TEXT,
		request_id TEXT,
		agent_id TEXT,
		tool TEXT NOT NULL,
		params TEXT,
		reason TEXT NOT NULL,
		requested_ms INTEGER NOT NULL,
		expires_ms INTEGER NOT NULL,
		decided_ms INTEGER,
		decided_by TEXT,
		note TEXT
	);
CREATE INDEX approvals_state ON approvals(state, requested_ms);
CREATE TABLE report_tools (
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
CREATE INDEX job_runs_scheduled ON job_runs(scheduled_ms, agent_id);
CREATE TABLE job_skips (
		job_id TEXT PRIMARY KEY,
		window_ms INTEGER NOT NULL,
		skipped INTEGER NOT NULL CHECK(skipped >= 0),
		first_ms INTEGER,
		last_ms INTEGER,
		reason TEXT
	);
CREATE INDEX request_log_held_age ON request_log(finished_ms, request_id, held_bytes, report_sha256) WHERE held_bytes > 0;
CREATE TABLE request_log_held (
		id INTEGER PRIMARY KEY CHECK(id = 1),
		bytes INTEGER NOT NULL CHECK(bytes >= 0)
	);
