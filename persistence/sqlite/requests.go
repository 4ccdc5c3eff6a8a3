package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// request_log.state values.
const (
	stateRunning = "running"
	stateDone    = "done"
)

// BeginRequest marks requestID as started, or reports how far it got before:
// RequestRunning when it was started and never finished, RequestDone with
// the stored report when it finished, RequestDropped (and no report) when
// it finished and its report was dropped for the byte bound (BeginKept
// says what is left of it). Like every write it goes through the writer
// and returns after the commit.
func (s *Store) BeginRequest(ctx context.Context, requestID string) (persistence.RequestState, []byte, error) {
	k, err := s.BeginKept(ctx, requestID, persistence.Run{})
	return k.State, k.Report, err
}

// Kept is what BeginKept found of a request: its state, the stored report
// of one done, and the stub of one whose report was dropped.
type Kept struct {
	State  persistence.RequestState
	Report []byte
	Stub   persistence.ReportStub
}

// BeginKept is BeginRun, with the stub a dropped report left.
func (s *Store) BeginKept(ctx context.Context, requestID string, run persistence.Run) (Kept, error) {
	if requestID == "" {
		return Kept{}, fmt.Errorf("begin request: %w", errEmptyRequestID)
	}
	var k Kept
	now := time.Now().UnixMilli()
	var params, tool, conv any // NULL when not known
	if len(run.Params) > 0 {
		params = string(run.Params)
	}
	if run.Tool != "" {
		tool = run.Tool
	}
	if run.ConversationID != "" {
		conv = run.ConversationID
	}
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		k = Kept{}
		res, err := s.txExec(ctx, tx,
			qBeginRequest, requestID, stateRunning, now, tool, params, conv)
		if err != nil {
			return fmt.Errorf("insert request: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("insert request: %w", err)
		} else if n == 1 {
			k.State = persistence.RequestNew
			return nil
		}
		var (
			stored                          string
			dropped                         bool
			storedTool, status, errType, hs sql.NullString
			resultBytes                     sql.NullInt64
		)
		err = s.txQueryRow(ctx, tx, qReadRequest, requestID).Scan(&stored, &k.Report, &dropped,
			&storedTool, &status, &errType, &resultBytes, &k.Stub.ReportBytes, &hs)
		if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		switch {
		case stored == stateRunning:
			k = Kept{State: persistence.RequestRunning}
		case stored == stateDone && dropped:
			k.State, k.Report = persistence.RequestDropped, nil
			k.Stub.Tool, k.Stub.Status, k.Stub.ErrorType = storedTool.String, status.String, errType.String
			k.Stub.ResultBytes, k.Stub.ReportSHA256 = resultBytes.Int64, hs.String
		case stored == stateDone:
			k.State, k.Stub = persistence.RequestDone, persistence.ReportStub{}
			if k.Report == nil {
				// The driver reads a zero-length BLOB as nil (and an
				// older version stored an empty report as NULL): this
				// was an empty report.
				k.Report = []byte{}
			}
		default:
			return fmt.Errorf("read request: unknown state %q", stored)
		}
		return nil
	})
	if err != nil {
		return Kept{}, fmt.Errorf("begin request %q: %w", requestID, err)
	}
	return k, nil
}

// FinishRequest marks requestID as done and stores report, the reply to send
// again if the request is repeated. A request that was never begun is
// recorded as done all the same; one already done keeps its first report.
func (s *Store) FinishRequest(ctx context.Context, requestID string, report []byte) error {
	if requestID == "" {
		return fmt.Errorf("finish request: %w", errEmptyRequestID)
	}
	k := newKeptReport(report, nil)
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		return s.finishRequestTx(ctx, tx, requestID, k)
	})
	if err != nil {
		return fmt.Errorf("finish request %q: %w", requestID, err)
	}
	return nil
}

// FinishToolCall records c in the audit trail and stores report as
// requestID's result in one transaction, so the request log never says a
// request finished whose run the audit trail lacks, nor the other way
// round. It returns after the commit.
func (s *Store) FinishToolCall(ctx context.Context, c persistence.ToolCall, requestID string, report []byte) error {
	if requestID == "" {
		return fmt.Errorf("finish tool call: %w", errEmptyRequestID)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("finish tool call: %w", err)
	}
	stamp(&c.RecordID, &c.Time)
	args := toolCallArgs(&c)
	k := newKeptReport(report, &c)
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		if err := s.insertChained(ctx, tx, "tool_calls", args); err != nil {
			return err
		}
		return s.finishRequestTx(ctx, tx, requestID, k)
	})
	if err != nil {
		return fmt.Errorf("finish tool call %s of request %q: %w", c.RecordID, requestID, err)
	}
	return nil
}

// keptReport is a finished request's report with the stub it leaves if
// it is dropped, computed before the writer takes it.
type keptReport struct {
	report []byte
	sum    string // SHA-256 of report, hex
	// status, errType and resultBytes are the run's audit row's, NULL
	// when the request has none.
	status, errType, resultBytes any
}

// newKeptReport copies report (the caller may reuse its buffer), mapping
// nil to empty (NULL would read back as a dropped report), and takes the
// stub's outcome from c, the run's audit row (nil: none).
func newKeptReport(report []byte, c *persistence.ToolCall) keptReport {
	if report == nil {
		report = []byte{}
	}
	sum := sha256.Sum256(report)
	k := keptReport{report: append([]byte(nil), report...), sum: hex.EncodeToString(sum[:])}
	if c != nil {
		k.status, k.errType, k.resultBytes = c.Status, nullIfEmpty(c.ErrorType), c.ResultBytes
	}
	return k
}

// finishRequestTx marks requestID done with k inside tx, counts its bytes
// and drops the oldest reports past the bound (dropReports).
func (s *Store) finishRequestTx(ctx context.Context, tx dbtx, requestID string, k keptReport) error {
	now := time.Now().UnixMilli()
	res, err := s.txExec(ctx, tx,
		qFinishRequest,
		requestID, stateDone, k.report, now, now, len(k.report), k.status, k.errType, k.resultBytes, k.sum, stateDone)
	if err != nil {
		return fmt.Errorf("store request report: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store request report: %w", err)
	}
	if n == 0 || len(k.report) == 0 {
		return nil // done before: its first report stays, counted then
	}
	return s.holdReport(ctx, tx, requestID, int64(len(k.report)))
}

// holdReport adds n bytes of requestID's report, just stored in tx, to
// the request log's count and drops reports past the bound.
func (s *Store) holdReport(ctx context.Context, tx dbtx, requestID string, n int64) error {
	var held int64
	if err := s.txQueryRow(ctx, tx, qHoldReport, n).Scan(&held); err != nil {
		return fmt.Errorf("count request log bytes: %w", err)
	}
	if held <= s.opts.RequestLogBytes {
		return nil
	}
	return s.dropReports(ctx, tx, requestID, held)
}

// dropBatch is how many of the oldest reports dropReports reads at once.
const dropBatch = 64

// dropReports drops the oldest reports of the request log, but never
// keep's (the newest), until what it holds, held bytes now, is within
// Options.RequestLogBytes. A dropped report's row stays, with the stub
// its finish stored; a row of an older version gets its stub here: the
// hash of the report and the outcome of its audit row.
func (s *Store) dropReports(ctx context.Context, tx dbtx, keep string, held int64) error {
	for held > s.opts.RequestLogBytes {
		rows, err := tx.QueryContext(ctx, qOldestReports, dropBatch)
		if err != nil {
			return fmt.Errorf("list oldest reports: %w", err)
		}
		type victim struct {
			id     string
			bytes  int64
			legacy bool
		}
		var vs []victim
		for rows.Next() {
			var v victim
			if err := rows.Scan(&v.id, &v.bytes, &v.legacy); err != nil {
				rows.Close()
				return fmt.Errorf("list oldest reports: %w", err)
			}
			vs = append(vs, v)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("list oldest reports: %w", err)
		}
		before := held
		for _, v := range vs {
			if held <= s.opts.RequestLogBytes {
				break
			}
			if v.id == keep {
				continue
			}
			if v.legacy {
				if err := dropLegacy(ctx, tx, v.id); err != nil {
					return err
				}
			} else if _, err := tx.ExecContext(ctx, `UPDATE request_log SET report = NULL, held_bytes = 0 WHERE request_id = ?`, v.id); err != nil {
				return fmt.Errorf("drop report of %q: %w", v.id, err)
			}
			held -= v.bytes
		}
		if held == before {
			break // only keep's report is left
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE request_log_held SET bytes = ? WHERE id = 1`, held); err != nil {
		return fmt.Errorf("count request log bytes: %w", err)
	}
	return nil
}

// dropLegacy drops the report of id, a row an older version finished
// (report_sha256 NULL), and fills in its stub: the report's size and
// hash, and the outcome of its audit row. One UPDATE, so that the row is
// written once, without its report (writing the stub first rewrote the
// report too).
func dropLegacy(ctx context.Context, tx dbtx, id string) error {
	var report []byte
	if err := tx.QueryRowContext(ctx, `SELECT report FROM request_log WHERE request_id = ?`, id).Scan(&report); err != nil {
		return fmt.Errorf("read report of %q: %w", id, err)
	}
	sum := sha256.Sum256(report)
	_, err := tx.ExecContext(ctx, `UPDATE request_log SET report = NULL, held_bytes = 0, report_bytes = ?3, report_sha256 = ?2,
		status = (SELECT status FROM tool_calls WHERE request_id = ?1 AND side = 'edge' ORDER BY id DESC LIMIT 1),
		error_type = (SELECT error_type FROM tool_calls WHERE request_id = ?1 AND side = 'edge' ORDER BY id DESC LIMIT 1),
		result_bytes = (SELECT result_bytes FROM tool_calls WHERE request_id = ?1 AND side = 'edge' ORDER BY id DESC LIMIT 1)
		WHERE request_id = ?1`, id, hex.EncodeToString(sum[:]), len(report))
	if err != nil {
		return fmt.Errorf("drop report of %q: %w", id, err)
	}
	return nil
}

// PruneRequests deletes the finished requests whose finish time is before
// olderThan and returns how many it deleted. Requests still running are kept.
func (s *Store) PruneRequests(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE request_log_held SET bytes = bytes - (SELECT coalesce(sum(held_bytes), 0)
			FROM request_log WHERE state = ? AND finished_ms < ?) WHERE id = 1`, stateDone, olderThan.UnixMilli())
		if err != nil {
			return fmt.Errorf("count request log bytes: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM request_log WHERE state = ? AND finished_ms < ?`,
			stateDone, olderThan.UnixMilli())
		if err != nil {
			return fmt.Errorf("delete requests: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("count deleted requests: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune requests: %w", err)
	}
	return n, nil
}

// qBeginRequest is a hot write, prepared once (stmtcache.go).
const qBeginRequest = `INSERT INTO request_log (request_id, state, started_ms, tool, params, conversation_id) VALUES (?, ?, ?, ?, ?, ?)
			 ON CONFLICT (request_id) DO NOTHING`

// qReadRequest is a hot write, prepared once (stmtcache.go). A done row
// whose report is NULL had it dropped (dropReports), unless it has no
// stub either: an older version stored an empty report as NULL. (The
// driver binds an empty slice as NULL, so qFinishRequest stores x”.)
const qReadRequest = `SELECT state, report, report IS NULL AND report_sha256 IS NOT NULL, tool, status, error_type, result_bytes, report_bytes, report_sha256
		FROM request_log WHERE request_id = ?`

// qFinishRequest is a hot write, prepared once (stmtcache.go). A finished
// request's arguments go: they were kept only to audit a run a crash cut
// (InterruptedRuns), and its tool_calls row holds them; kept for the hour
// a done request stays, a flood of commands with large unused arguments
// wrote them to the agent's disk twice.
const qFinishRequest = `INSERT INTO request_log (request_id, state, report, started_ms, finished_ms,
			report_bytes, held_bytes, status, error_type, result_bytes, report_sha256) VALUES (?, ?, coalesce(?, x''), ?, ?, ?, ?6, ?, ?, ?, ?)
		 ON CONFLICT (request_id) DO UPDATE SET state = excluded.state, report = excluded.report, finished_ms = excluded.finished_ms, params = NULL,
			report_bytes = excluded.report_bytes, held_bytes = excluded.held_bytes, status = excluded.status, error_type = excluded.error_type,
			result_bytes = excluded.result_bytes, report_sha256 = excluded.report_sha256
		 WHERE request_log.state <> ?`

// qOldestReports lists the oldest reports held, through
// request_log_held_age.
const qOldestReports = `SELECT request_id, held_bytes, report_sha256 IS NULL FROM request_log
		WHERE held_bytes > 0 ORDER BY finished_ms, request_id LIMIT ?`

// qHoldReport is a hot write, prepared once (stmtcache.go): it counts a
// report's bytes and returns what the request log holds now.
const qHoldReport = `UPDATE request_log_held SET bytes = bytes + ? WHERE id = 1 RETURNING bytes`
