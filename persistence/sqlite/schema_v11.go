package sqlite

// migrationV11 adds job_skips: per job, the skipped runs counted since
// the last one recorded in full (jobskips.go). A job whose runs are
// skipped every minute for 64 agents wrote 64 job_run events and job_runs
// rows a minute; 256 such jobs, 16,384 events (5.5 MB) a minute. Like
// job_runs it is working state, not chained: what it counts reaches the
// chain as a job_runs_skipped event when its window closes.
const migrationV11 = `CREATE TABLE job_skips (
		job_id TEXT PRIMARY KEY,
		window_ms INTEGER NOT NULL,
		skipped INTEGER NOT NULL CHECK(skipped >= 0),
		first_ms INTEGER,
		last_ms INTEGER,
		reason TEXT
	);`
