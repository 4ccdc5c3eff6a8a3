package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/evoclaw/evoclaw/persistence"
)

// RecordLLMCall validates c, fills in RecordID and Time when empty, and
// stores the record. It returns after the record is committed. If ctx ends
// first it returns ctx's error, and the record, already queued, may still be
// committed afterwards.
func (s *Store) RecordLLMCall(ctx context.Context, c persistence.LLMCall) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("record llm call: %w", err)
	}
	stamp(&c.RecordID, &c.Time)
	t := c.Time.UTC()
	args := []any{
		c.RecordID, t.Format(tsLayout), t.UnixMilli(), c.Node, nullIfEmpty(c.ConversationID),
		c.Provider, nullIfEmpty(c.Model), c.InputTokens, c.OutputTokens, c.LatencyMs,
		c.Status, nullIfEmpty(c.ErrorType), nullIfEmpty(c.Error), int64(c.Iteration),
	}
	err := s.submit(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.insertChained(ctx, tx, "llm_calls", args)
	})
	if err != nil {
		return fmt.Errorf("record llm call %s: %w", c.RecordID, err)
	}
	return nil
}
