package sqlite

// migrationV12 bounds the request log by bytes (requests.go). Every
// finished request kept its whole report for an hour: a tool run 10 times
// a second at a 512 KiB result grew an agent's database by 5 MB a second.
// Now each row says how many bytes of report it holds (held_bytes), the
// one row of request_log_held keeps their total, and past the bound the
// oldest reports are set to NULL (held_bytes 0); the stub a dropped
// report leaves (status, error_type, result_bytes, report_bytes,
// report_sha256) answers a redelivery without running the request again.
// request_log_held_age holds only rows with a report to drop, and covers
// what dropReports reads: the table's columns after a report are read
// through its overflow pages, 128 of them for a 512 KiB report. Rows of an
// older version keep their report and count from here; the stub of one
// is filled in if its report is dropped.
const migrationV12 = `ALTER TABLE request_log ADD COLUMN report_bytes INTEGER NOT NULL DEFAULT 0 CHECK(report_bytes >= 0);
	ALTER TABLE request_log ADD COLUMN held_bytes INTEGER NOT NULL DEFAULT 0 CHECK(held_bytes >= 0);
	ALTER TABLE request_log ADD COLUMN status TEXT;
	ALTER TABLE request_log ADD COLUMN error_type TEXT;
	ALTER TABLE request_log ADD COLUMN result_bytes INTEGER;
	ALTER TABLE request_log ADD COLUMN report_sha256 TEXT;
	UPDATE request_log SET report_bytes = length(report), held_bytes = length(report) WHERE report IS NOT NULL;
	CREATE INDEX request_log_held_age ON request_log(finished_ms, request_id, held_bytes, report_sha256) WHERE held_bytes > 0;
	CREATE TABLE request_log_held (
		id INTEGER PRIMARY KEY CHECK(id = 1),
		bytes INTEGER NOT NULL CHECK(bytes >= 0)
	);
	INSERT INTO request_log_held (id, bytes) SELECT 1, coalesce(sum(held_bytes), 0) FROM request_log;`
