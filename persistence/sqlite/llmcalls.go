package sqlite

import (
	"context"
	"fmt"

	"github.com/evoclaw/evoclaw/persistence"
)

// RecordLLMCall validates c, fills in RecordID and Time when empty, and
// stores the record. It returns after the record is committed. If ctx ends
// first it returns ctx's error, and the record, already queued, may still be
// committed afterwards.
func (s *Store) RecordLLMCall(ctx context.Context, c persistence.LLMCall) error {
	args, err := llmCallArgs(&c)
	if err != nil {
		return err
	}
	err = s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		return s.insertChained(ctx, tx, "llm_calls", args)
	})
	if err != nil {
		return fmt.Errorf("record llm call %s: %w", c.RecordID, err)
	}
	return nil
}

// QueueLLMCall queues c for the writer and returns without waiting for its
// commit; then (which may be nil) gets the result on the committer
// and must be quick. A write submitted after QueueLLMCall returns commits
// no earlier than c (the writer is first in, first out), so a conversation
// that stores its history before its next completion also has the record
// of the previous one committed by then. The error is for a record that
// was not queued (invalid, ErrQueueFull, ErrClosed).
func (s *Store) QueueLLMCall(c persistence.LLMCall, then func(error)) error {
	args, err := llmCallArgs(&c)
	if err != nil {
		return err
	}
	id := c.RecordID
	err = s.submitQueued(func(ctx context.Context, tx dbtx) error {
		return s.insertChained(ctx, tx, "llm_calls", args)
	}, func(err error) {
		if then != nil {
			if err != nil {
				err = fmt.Errorf("record llm call %s: %w", id, err)
			}
			then(err)
		}
	})
	if err != nil {
		return fmt.Errorf("record llm call %s: %w", c.RecordID, err)
	}
	return nil
}

// llmCallArgs validates c, fills its record id and time when unset, and
// returns its hashed column values without chain_seq.
func llmCallArgs(c *persistence.LLMCall) ([]any, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("record llm call: %w", err)
	}
	stamp(&c.RecordID, &c.Time)
	t := c.Time.UTC()
	return []any{
		c.RecordID, t.Format(tsLayout), t.UnixMilli(), c.Node, nullIfEmpty(c.ConversationID),
		c.Provider, nullIfEmpty(c.Model), c.InputTokens, c.OutputTokens, c.LatencyMs,
		c.Status, nullIfEmpty(c.ErrorType), nullIfEmpty(c.Error), int64(c.Iteration),
	}, nil
}
