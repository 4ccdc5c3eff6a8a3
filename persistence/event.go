package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidEvent reports an Event that cannot be recorded as given.
var ErrInvalidEvent = errors.New("invalid event")

// Event kinds written by evoclaw itself. Kind is free text; these are the
// ones the project's own code uses, so queries can rely on them.
const (
	EventNodeStart      = "node_start"      // a node started
	EventNodeStop       = "node_stop"       // a node stopped cleanly
	EventAgentOnline    = "agent_online"    // an edge agent came online
	EventAgentOffline   = "agent_offline"   // an edge agent went offline
	EventInvalidMessage = "invalid_message" // a malformed wire message was dropped
	// EventKeyPredatesTrail: the audit trail was new but its key file was
	// already there, so the database that key sealed before is gone
	// (deleted, moved or lost): the first record of the new trail says so.
	EventKeyPredatesTrail = "audit_key_predates_trail"
)

// Event is one node or agent event worth auditing (start, stop, presence
// changes, dropped malformed messages).
type Event struct {
	// RecordID is the unique id of this record. Empty means the store
	// generates one with NewRecordID.
	RecordID string
	// Time is when it happened. The store keeps it in UTC; zero means the
	// time the record is handed to the store.
	Time time.Time
	// Node is the id of the node writing the record. Required.
	Node string
	// AgentID is the edge agent the event is about; may be empty.
	AgentID string
	// Kind says what happened (see the Event* constants). Required.
	Kind string
	// Detail holds extra fields as JSON. Empty means none (stored as NULL);
	// anything else must be valid JSON.
	Detail json.RawMessage
}

// Validate reports whether e can be recorded. The error wraps
// ErrInvalidEvent.
func (e *Event) Validate() error {
	var problem string
	switch {
	case e.Node == "":
		problem = "node is empty"
	case e.Kind == "":
		problem = "kind is empty"
	case len(e.Detail) > 0 && !json.Valid(e.Detail):
		problem = "detail is not valid JSON"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidEvent, problem)
}

// EventLog records node and agent events.
type EventLog interface {
	// RecordEvent stores e and returns once it is committed.
	RecordEvent(ctx context.Context, e Event) error
}
