package sqlite

// migrationV7 adds the scheduler's jobs and their runs, and the durable
// queue of tool calls waiting for a person's approval. None of these tables
// is chained: they are working state, like request_log. What they decide is
// audited as chained events (job_run, job_run_started, job_changed,
// approval_requested, approval_decided) written in the same transaction.
//
// job_runs' UNIQUE(job_id, scheduled_ms, agent_id) is the claim: a run is
// inserted before it starts, so a restart or a clock set back can never
// start the same instant twice.
const migrationV7 = `CREATE TABLE jobs (
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
	CREATE INDEX approvals_state ON approvals(state, requested_ms);`
