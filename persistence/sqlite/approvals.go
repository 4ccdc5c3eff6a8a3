package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// DefaultApprovalsKept is how many decided approvals the approvals table
// keeps; older ones are deleted as new ones are requested. Their events
// stay in the audit trail.
const DefaultApprovalsKept = 1000

// Sentinel errors of the approvals queue.
var (
	// ErrTooManyPending refuses an approval request while the queue holds
	// its maximum of pending ones.
	ErrTooManyPending = errors.New("too many pending approvals")
	// ErrNoApproval reports an approval id the store does not have.
	ErrNoApproval = errors.New("no such approval")
	// ErrDecided refuses a decision on an approval that is no longer
	// pending.
	ErrDecided = errors.New("approval already decided")
)

// CreateApproval stores a as pending with its approval_requested event,
// unless maxPending approvals are pending already (ErrTooManyPending).
func (s *Store) CreateApproval(ctx context.Context, a persistence.Approval, maxPending int) error {
	if a.ID == "" || a.Tool == "" {
		return fmt.Errorf("create approval: %w: empty id or tool", ErrInvalidOptions)
	}
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM approvals WHERE state = 'pending'`).Scan(&n); err != nil {
			return err
		}
		if n >= maxPending {
			return fmt.Errorf("%w: %d wait for a decision", ErrTooManyPending, n)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (approval_id, state, conversation_id, request_id, agent_id, tool,
			params, reason, requested_ms, expires_ms) VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, nullIfEmpty(a.ConversationID), nullIfEmpty(a.RequestID), nullIfEmpty(a.AgentID), a.Tool,
			nullIfEmpty(a.Params), a.Reason, a.Requested.UnixMilli(), a.Expires.UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM approvals WHERE state <> 'pending' AND approval_id NOT IN
			(SELECT approval_id FROM approvals WHERE state <> 'pending' ORDER BY requested_ms DESC LIMIT ?)`, DefaultApprovalsKept); err != nil {
			return fmt.Errorf("prune approvals: %w", err)
		}
		return s.insertChained(ctx, tx, "events", eventArgs(persistence.EventApprovalRequested, a.Requested, a.Node, a.AgentID,
			map[string]any{"approval": a.ID, "tool": a.Tool, "conversation_id": a.ConversationID, "request_id": a.RequestID,
				"params": persistence.Excerpt(a.Params), "reason": a.Reason, "expires": a.Expires.UTC().Format(time.RFC3339)}))
	})
	if err != nil {
		return fmt.Errorf("create approval %s: %w", a.ID, err)
	}
	return nil
}

// DecideApproval moves pending approval id to state (approved, denied,
// timed_out, canceled), naming who decided, with its approval_decided
// event. It returns the decided approval; one that is no longer pending is
// refused with ErrDecided (and returned as it is).
func (s *Store) DecideApproval(ctx context.Context, id, state, by, note, node string, at time.Time) (persistence.Approval, error) {
	switch state {
	case persistence.ApprovalApproved, persistence.ApprovalDenied, persistence.ApprovalTimedOut, persistence.ApprovalCanceled:
	default:
		return persistence.Approval{}, fmt.Errorf("decide approval %s: %w: state %q", id, ErrInvalidOptions, state)
	}
	if by == "" {
		return persistence.Approval{}, fmt.Errorf("decide approval %s: %w: no decider", id, ErrInvalidOptions)
	}
	var a persistence.Approval
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		var err error
		if a, err = readApproval(ctx, tx, id); err != nil {
			return err
		}
		if a.State != persistence.ApprovalPending {
			return fmt.Errorf("%w: %s by %s", ErrDecided, a.State, a.DecidedBy)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE approvals SET state = ?, decided_ms = ?, decided_by = ?, note = ? WHERE approval_id = ?`,
			state, at.UnixMilli(), by, nullIfEmpty(note), id); err != nil {
			return err
		}
		a.State, a.Decided, a.DecidedBy, a.Note = state, time.UnixMilli(at.UnixMilli()), by, note
		return s.insertChained(ctx, tx, "events", eventArgs(persistence.EventApprovalDecided, at, node, a.AgentID,
			map[string]any{"approval": id, "tool": a.Tool, "state": state, "by": by, "note": persistence.Excerpt(note),
				"conversation_id": a.ConversationID, "request_id": a.RequestID,
				"waited_ms": at.Sub(a.Requested).Milliseconds()}))
	})
	if err != nil {
		return a, fmt.Errorf("decide approval %s: %w", id, err)
	}
	return a, nil
}

// Approval returns approval id.
func (s *Store) Approval(ctx context.Context, id string) (persistence.Approval, error) {
	a, err := readApproval(ctx, s.rdb, id)
	if err != nil {
		return a, fmt.Errorf("read approval %s: %w", id, err)
	}
	return a, nil
}

// Approvals returns approvals in state (every state when empty), newest
// first, at most limit (all when limit <= 0).
func (s *Store) Approvals(ctx context.Context, state string, limit int) ([]persistence.Approval, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.rdb.QueryContext(ctx, approvalColumns+` FROM approvals WHERE ? = '' OR state = ?
		ORDER BY requested_ms DESC, approval_id LIMIT ?`, state, state, limit)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	defer rows.Close()
	var out []persistence.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return out, nil
}

const approvalColumns = `SELECT approval_id, state, coalesce(conversation_id, ''), coalesce(request_id, ''), coalesce(agent_id, ''),
	tool, coalesce(params, ''), reason, requested_ms, expires_ms, decided_ms, coalesce(decided_by, ''), coalesce(note, '')`

// rowQueryer is a *sql.DB or *sql.Tx.
type rowQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readApproval(ctx context.Context, q rowQueryer, id string) (persistence.Approval, error) {
	a, err := scanApproval(q.QueryRowContext(ctx, approvalColumns+` FROM approvals WHERE approval_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, ErrNoApproval
	}
	return a, err
}

func scanApproval(row interface{ Scan(...any) error }) (persistence.Approval, error) {
	var (
		a                  persistence.Approval
		requested, expires int64
		decided            sql.NullInt64
	)
	if err := row.Scan(&a.ID, &a.State, &a.ConversationID, &a.RequestID, &a.AgentID, &a.Tool, &a.Params, &a.Reason,
		&requested, &expires, &decided, &a.DecidedBy, &a.Note); err != nil {
		return a, err
	}
	a.Requested, a.Expires = time.UnixMilli(requested), time.UnixMilli(expires)
	if decided.Valid {
		a.Decided = time.UnixMilli(decided.Int64)
	}
	return a, nil
}
