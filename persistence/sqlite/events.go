package sqlite

import (
	"context"
	"fmt"

	"github.com/evoclaw/evoclaw/persistence"
)

// RecordEvent validates e, fills in RecordID and Time when empty, and stores
// the record. It returns after the record is committed.
func (s *Store) RecordEvent(ctx context.Context, e persistence.Event) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	err := s.submit(ctx, s.eventInsert(&e))
	if err != nil {
		return fmt.Errorf("record event %s: %w", e.RecordID, err)
	}
	return nil
}

// QueueEvent validates e, fills in RecordID and Time when empty, and queues
// the record without waiting for its commit, which starts at once (it does
// not linger for company); then gets the result on the committer and must
// be quick. A write submitted after QueueEvent returns commits no earlier
// than e. The error is for a record that was not queued (invalid,
// ErrQueueFull, ErrClosed).
func (s *Store) QueueEvent(e persistence.Event, then func(error)) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	lead, err := s.enqueue(&op{apply: s.eventInsert(&e), then: then, prompt: true})
	if err != nil {
		return fmt.Errorf("record event %s: %w", e.RecordID, err)
	}
	if lead {
		go s.lead(nil, false)
	}
	return nil
}

// eventInsert fills in e's RecordID and Time when empty and returns the
// write that inserts it as the chain's next record.
func (s *Store) eventInsert(e *persistence.Event) func(ctx context.Context, tx dbtx) error {
	stamp(&e.RecordID, &e.Time)
	t := e.Time.UTC()
	var detail any
	if len(e.Detail) > 0 {
		detail = string(e.Detail) // TEXT: a BLOB would be read by json_valid as JSONB
	}
	args := []any{e.RecordID, t.Format(tsLayout), t.UnixMilli(), e.Node, nullIfEmpty(e.AgentID), e.Kind, detail}
	return func(ctx context.Context, tx dbtx) error {
		return s.insertChained(ctx, tx, "events", args)
	}
}
