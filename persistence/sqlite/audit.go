package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// tsLayout is RFC 3339 with a fixed nine-digit fraction: it parses with
// time.RFC3339Nano and, unlike that layout, sorts as text in time order.
const tsLayout = "2006-01-02T15:04:05.000000000Z07:00"

// RecordToolCall validates c, fills in RecordID and Time when empty, cuts
// ResultExcerpt with persistence.Excerpt, and stores the record. It returns
// after the record is committed. If ctx ends first it returns ctx's error,
// and the record, already queued, may still be committed afterwards.
func (s *Store) RecordToolCall(ctx context.Context, c persistence.ToolCall) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	stamp(&c.RecordID, &c.Time)
	args, run := toolCallArgs(&c), c.FinishesRun
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		return s.insertToolCall(ctx, tx, args, run)
	})
	if err != nil {
		return fmt.Errorf("record tool call %s: %w", c.RecordID, err)
	}
	return nil
}

// insertToolCall inserts a tool call's row (args from toolCallArgs) in tx
// and, when run is set, marks that request of the request log done.
func (s *Store) insertToolCall(ctx context.Context, tx dbtx, args []any, run string) error {
	if err := s.insertChained(ctx, tx, "tool_calls", args); err != nil {
		return err
	}
	if run == "" {
		return nil
	}
	return s.finishRequestTx(ctx, tx, run, keptReport{report: []byte{}})
}

// QueueToolCall queues c for the writer and returns without waiting for
// its commit; then (which may be nil) gets the result on the writer
// goroutine and must be quick. A write submitted after QueueToolCall
// returns commits no earlier than c (the writer is first in, first out).
// The error is for a record that was not queued (invalid, ErrQueueFull,
// ErrClosed).
func (s *Store) QueueToolCall(c persistence.ToolCall, then func(error)) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	if c.RecordID == "" {
		c.RecordID = persistence.NewRecordID()
	}
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	args, id, run := toolCallArgs(&c), c.RecordID, c.FinishesRun
	err := s.submitQueued(func(ctx context.Context, tx dbtx) error {
		return s.insertToolCall(ctx, tx, args, run)
	}, func(err error) {
		if then != nil {
			if err != nil {
				err = fmt.Errorf("record tool call %s: %w", id, err)
			}
			then(err)
		}
	})
	if err != nil {
		return fmt.Errorf("record tool call %s: %w", id, err)
	}
	return nil
}

// toolCallArgs returns the hashed column values of c, in the order of
// auditchain's tool_calls columns, without chain_seq.
func toolCallArgs(c *persistence.ToolCall) []any {
	t := c.Time.UTC()
	var params any
	if len(c.Params) > 0 {
		// Bound as TEXT: a BLOB would be read by json_valid as JSONB.
		params = string(c.Params)
	}
	var exitCode any
	if c.ExitCode != nil {
		exitCode = int64(*c.ExitCode)
	}
	var agentElapsed any // a nil any, NULL: hashed as absent
	if c.AgentElapsedMs != nil {
		agentElapsed = *c.AgentElapsedMs
	}
	return []any{
		c.RecordID, t.Format(tsLayout), t.UnixMilli(), c.Node, c.Side,
		nullIfEmpty(c.ConversationID), nullIfEmpty(c.RequestID), nullIfEmpty(c.CallID), nullIfEmpty(c.AgentID),
		c.Tool, params, c.Status, nullIfEmpty(c.ErrorType), nullIfEmpty(c.Error), exitCode,
		c.ElapsedMs, nullIfEmpty(persistence.Excerpt(c.ResultExcerpt)), c.ResultBytes, agentElapsed,
	}
}

// nullIfEmpty maps "" to NULL for optional text columns.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// stamp gives a record about to be stored an id and the current time
// where the caller left them unset.
func stamp(id *string, at *time.Time) {
	if *id == "" {
		*id = persistence.NewRecordID()
	}
	if at.IsZero() {
		*at = time.Now()
	}
}
