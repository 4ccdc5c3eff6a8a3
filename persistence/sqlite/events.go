package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/evoclaw/evoclaw/persistence"
)

// RecordEvent validates e, fills in RecordID and Time when empty, and stores
// the record. It returns after the record is committed.
func (s *Store) RecordEvent(ctx context.Context, e persistence.Event) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	stamp(&e.RecordID, &e.Time)
	t := e.Time.UTC()
	var detail any
	if len(e.Detail) > 0 {
		detail = string(e.Detail) // TEXT: a BLOB would be read by json_valid as JSONB
	}
	args := []any{e.RecordID, t.Format(tsLayout), t.UnixMilli(), e.Node, nullIfEmpty(e.AgentID), e.Kind, detail}
	err := s.submit(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.insertChained(ctx, tx, "events", args)
	})
	if err != nil {
		return fmt.Errorf("record event %s: %w", e.RecordID, err)
	}
	return nil
}
