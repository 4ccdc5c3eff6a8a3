package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

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
// through its overflow pages, 128 of them for a 512 KiB report. The
// reports of an older version are counted, or dropped with their stub, by
// adoptV12 (migrationHooks[12]).
//
// The step's SQL changed after its release: it counted every older report
// with one UPDATE, which rewrote each row, report and all, into the
// upgrade's transaction. An agent holding an hour of large reports (the
// case v12 is for: 500 MB of them) needed as much again free for the
// write-ahead log, and with less failed its start on "disk is full", every
// start. A database the old step upgraded holds every older report
// counted, and its first finish past the bound drops the older ones as
// adoptV12 does: both states are valid, and the schema is the same.
const migrationV12 = `ALTER TABLE request_log ADD COLUMN report_bytes INTEGER NOT NULL DEFAULT 0 CHECK(report_bytes >= 0);
	ALTER TABLE request_log ADD COLUMN held_bytes INTEGER NOT NULL DEFAULT 0 CHECK(held_bytes >= 0);
	ALTER TABLE request_log ADD COLUMN status TEXT;
	ALTER TABLE request_log ADD COLUMN error_type TEXT;
	ALTER TABLE request_log ADD COLUMN result_bytes INTEGER;
	ALTER TABLE request_log ADD COLUMN report_sha256 TEXT;
	CREATE INDEX request_log_held_age ON request_log(finished_ms, request_id, held_bytes, report_sha256) WHERE held_bytes > 0;
	CREATE TABLE request_log_held (
		id INTEGER PRIMARY KEY CHECK(id = 1),
		bytes INTEGER NOT NULL CHECK(bytes >= 0)
	);
	INSERT INTO request_log_held (id, bytes) VALUES (1, 0);`

// requestLogVersion is the schema version that bounds the request log.
const requestLogVersion = 12

// legacyReportBytes is how many bytes of an older version's reports
// adoptV12 counts as held (a variable so that tests need not write
// DefaultRequestLogBytes of them).
var legacyReportBytes int64 = DefaultRequestLogBytes

// adoptV12 counts the reports an older version left in the request log
// without writing more of them than the bound holds: setting a row's
// count rewrites the row, its report included. The newest, up to
// legacyReportBytes (DefaultRequestLogBytes), are counted as held; the
// older ones are dropped with their stub (dropLegacy), which rewrites only
// the row without its report, as the first finish past the bound would
// have dropped them. A smaller configured bound drops more at that finish.
// Finding them reads each row's length and finish time, not its report;
// dropping reads a report once, for its hash.
func adoptV12(ctx context.Context, tx dbtx, _ auditchain.Key) error {
	rows, err := tx.QueryContext(ctx, `SELECT request_id, length(report) FROM request_log
		WHERE report IS NOT NULL ORDER BY finished_ms DESC, request_id DESC`)
	if err != nil {
		return fmt.Errorf("list older reports: %w", err)
	}
	type report struct {
		id    string
		bytes int64
	}
	var keep, drop []report
	var held int64
	for rows.Next() {
		var r report
		if err := rows.Scan(&r.id, &r.bytes); err != nil {
			rows.Close()
			return fmt.Errorf("list older reports: %w", err)
		}
		if len(drop) == 0 && held+r.bytes <= legacyReportBytes {
			held += r.bytes
			keep = append(keep, r)
		} else {
			drop = append(drop, r)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("list older reports: %w", err)
	}
	for _, r := range keep {
		if _, err := tx.ExecContext(ctx, `UPDATE request_log SET report_bytes = ?2, held_bytes = ?2 WHERE request_id = ?1`,
			r.id, r.bytes); err != nil {
			return fmt.Errorf("count report of %q: %w", r.id, err)
		}
	}
	for _, r := range drop {
		if err := dropLegacy(ctx, tx, r.id); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE request_log_held SET bytes = ? WHERE id = 1`, held); err != nil {
		return fmt.Errorf("count request log bytes: %w", err)
	}
	return nil
}
