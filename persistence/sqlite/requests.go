package sqlite

import (
	"context"
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
// the stored report when it finished. Like every write it goes through the
// writer and returns after the commit.
func (s *Store) BeginRequest(ctx context.Context, requestID string) (persistence.RequestState, []byte, error) {
	return s.beginRequest(ctx, requestID, persistence.Run{})
}

// beginRequest is BeginRequest and BeginRun.
func (s *Store) beginRequest(ctx context.Context, requestID string, run persistence.Run) (persistence.RequestState, []byte, error) {
	if requestID == "" {
		return 0, nil, fmt.Errorf("begin request: %w", errEmptyRequestID)
	}
	var (
		state  persistence.RequestState
		report []byte
	)
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
		state, report = 0, nil
		res, err := s.txExec(ctx, tx,
			qBeginRequest, requestID, stateRunning, now, tool, params, conv)
		if err != nil {
			return fmt.Errorf("insert request: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("insert request: %w", err)
		} else if n == 1 {
			state = persistence.RequestNew
			return nil
		}
		var stored string
		err = s.txQueryRow(ctx, tx, qReadRequest, requestID).Scan(&stored, &report)
		if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		switch stored {
		case stateRunning:
			state, report = persistence.RequestRunning, nil
		case stateDone:
			state = persistence.RequestDone
			if report == nil {
				// The driver reads a zero-length BLOB as nil; FinishRequest
				// never stores NULL, so this was an empty report.
				report = []byte{}
			}
		default:
			return fmt.Errorf("read request: unknown state %q", stored)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("begin request %q: %w", requestID, err)
	}
	return state, report, nil
}

// FinishRequest marks requestID as done and stores report, the reply to send
// again if the request is repeated. A request that was never begun is
// recorded as done all the same; one already done keeps its first report.
func (s *Store) FinishRequest(ctx context.Context, requestID string, report []byte) error {
	if requestID == "" {
		return fmt.Errorf("finish request: %w", errEmptyRequestID)
	}
	report = ownReport(report)
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		return s.finishRequestTx(ctx, tx, requestID, report)
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
	report = ownReport(report)
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		if err := s.insertChained(ctx, tx, "tool_calls", args); err != nil {
			return err
		}
		return s.finishRequestTx(ctx, tx, requestID, report)
	})
	if err != nil {
		return fmt.Errorf("finish tool call %s of request %q: %w", c.RecordID, requestID, err)
	}
	return nil
}

// ownReport copies a report (the caller may reuse its buffer) and maps nil
// to empty: NULL would read back as "no report".
func ownReport(report []byte) []byte {
	if report == nil {
		return []byte{}
	}
	return append([]byte(nil), report...)
}

// finishRequestTx marks requestID done with report inside tx.
func (s *Store) finishRequestTx(ctx context.Context, tx dbtx, requestID string, report []byte) error {
	now := time.Now().UnixMilli()
	_, err := s.txExec(ctx, tx,
		qFinishRequest,
		requestID, stateDone, report, now, now, stateDone)
	if err != nil {
		return fmt.Errorf("store request report: %w", err)
	}
	return nil
}

// PruneRequests deletes the finished requests whose finish time is before
// olderThan and returns how many it deleted. Requests still running are kept.
func (s *Store) PruneRequests(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
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

// qReadRequest is a hot write, prepared once (stmtcache.go).
const qReadRequest = `SELECT state, report FROM request_log WHERE request_id = ?`

// qFinishRequest is a hot write, prepared once (stmtcache.go).
const qFinishRequest = `INSERT INTO request_log (request_id, state, report, started_ms, finished_ms) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (request_id) DO UPDATE SET state = excluded.state, report = excluded.report, finished_ms = excluded.finished_ms
		 WHERE request_log.state <> ?`
