package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// ErrNotRunning is returned by FinishInterrupted for a request that is no
// longer running: another start of the agent audited it already.
var ErrNotRunning = persistence.ErrNotRunning

// BeginRun is BeginRequest recording what the request runs, so that an
// agent started after a crash can audit the run it cut (InterruptedRuns).
// A request seen before keeps what was recorded then.
func (s *Store) BeginRun(ctx context.Context, requestID string, run persistence.Run) (persistence.RequestState, []byte, error) {
	k, err := s.BeginKept(ctx, requestID, run)
	return k.State, k.Report, err
}

// NoteRunProcess records the process group the tool of a running request
// runs in. It changes nothing once the request is done.
func (s *Store) NoteRunProcess(ctx context.Context, requestID string, p persistence.RunProcess) error {
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		_, err := s.txExec(ctx, tx, qNoteProcess,
			p.Pgid, int64(p.StartTicks), p.BootID, requestID, stateRunning)
		return err
	})
	if err != nil {
		return fmt.Errorf("note process of request %q: %w", requestID, err)
	}
	return nil
}

// InterruptedRuns lists the requests begun and never finished, oldest
// first. Called when an agent starts, before it takes commands, these are
// the runs a crash or a kill cut.
func (s *Store) InterruptedRuns(ctx context.Context) ([]persistence.InterruptedRun, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT request_id, started_ms, tool, params, conversation_id, pgid, pgid_start, boot_id
		FROM request_log WHERE state = ? ORDER BY started_ms, request_id`, stateRunning)
	if err != nil {
		return nil, fmt.Errorf("list interrupted runs: %w", err)
	}
	defer rows.Close()
	var out []persistence.InterruptedRun
	for rows.Next() {
		var (
			r                  persistence.InterruptedRun
			started            int64
			tool, params, conv sql.NullString
			pgid, pgStart      sql.NullInt64
			boot               sql.NullString
		)
		if err := rows.Scan(&r.RequestID, &started, &tool, &params, &conv, &pgid, &pgStart, &boot); err != nil {
			return nil, fmt.Errorf("list interrupted runs: %w", err)
		}
		r.Started = time.UnixMilli(started)
		r.Tool, r.ConversationID = tool.String, conv.String
		if params.Valid {
			r.Params = []byte(params.String)
		}
		if pgid.Valid && pgid.Int64 > 0 {
			r.Process = &persistence.RunProcess{Pgid: int(pgid.Int64), StartTicks: uint64(pgStart.Int64), BootID: boot.String}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list interrupted runs: %w", err)
	}
	return out, nil
}

// FinishInterrupted records c, the audit row of a run a crash cut, and
// stores report as requestID's result, in one transaction, only if the
// request is still running; otherwise it records nothing and returns
// ErrNotRunning. So a run is audited as interrupted once, however often
// the agent restarts, and never beside a result of its own.
func (s *Store) FinishInterrupted(ctx context.Context, c persistence.ToolCall, requestID string, report []byte) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("finish interrupted run: %w", err)
	}
	stamp(&c.RecordID, &c.Time)
	args := toolCallArgs(&c)
	k := newKeptReport(report, &c)
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE request_log SET state = ?, report = coalesce(?, x''), finished_ms = ?,
			report_bytes = ?4, held_bytes = ?4, status = ?, error_type = ?, result_bytes = ?, report_sha256 = ? WHERE request_id = ? AND state = ?`,
			stateDone, k.report, time.Now().UnixMilli(), len(k.report), k.status, k.errType, k.resultBytes, k.sum, requestID, stateRunning)
		if err != nil {
			return fmt.Errorf("store request report: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("store request report: %w", err)
		} else if n == 0 {
			return ErrNotRunning
		}
		if err := s.insertChained(ctx, tx, "tool_calls", args); err != nil {
			return err
		}
		if len(k.report) == 0 {
			return nil
		}
		return s.holdReport(ctx, tx, requestID, int64(len(k.report)))
	})
	if err != nil {
		return fmt.Errorf("finish interrupted request %q: %w", requestID, err)
	}
	return nil
}

// qNoteProcess is a hot write, prepared once (stmtcache.go).
const qNoteProcess = `UPDATE request_log SET pgid = ?, pgid_start = ?, boot_id = ? WHERE request_id = ? AND state = ?`
