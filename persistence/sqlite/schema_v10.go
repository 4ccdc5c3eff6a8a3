package sqlite

// migrationV10 indexes job_runs by scheduled instant. GET /v1/runs
// without ?job= lists every job's runs newest first (JobRuns): without an
// index SQLite read and sorted the whole table for each request, 0.2 to
// 0.4 s at the 127,000 runs 256 jobs keep. The index holds the order
// JobRuns asks for (scheduled_ms, agent_id, then the rowid id), so the
// newest LIMIT runs are read from its end.
const migrationV10 = `CREATE INDEX job_runs_scheduled ON job_runs(scheduled_ms, agent_id);`
