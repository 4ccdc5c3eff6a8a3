package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidMessage reports a Message that cannot be stored as given.
var ErrInvalidMessage = errors.New("invalid message")

// Message is one stored chat message of a conversation; Body is the JSON of
// the orchestrator's llm.Message (persistence must not import orchestrator
// packages).
type Message struct {
	// ConversationID is the conversation the message belongs to. The store
	// sets it from AppendMessages' argument; a different non-empty value is
	// an error.
	ConversationID string
	// Seq is the message's position in its conversation, starting at 1.
	// AppendMessages assigns it; a value given to AppendMessages is ignored.
	Seq int64
	// Time is when the message was produced. The store keeps it in UTC;
	// zero means the time it is handed to the store.
	Time time.Time
	// Role is the chat role ("system", "user", "assistant", "tool").
	// Required.
	Role string
	// Body is the message as JSON. Required, must be valid JSON.
	Body json.RawMessage
}

// Validate reports whether m can be stored in conversationID. The error
// wraps ErrInvalidMessage.
func (m *Message) Validate(conversationID string) error {
	var problem string
	switch {
	case conversationID == "":
		problem = "conversation id is empty"
	case m.ConversationID != "" && m.ConversationID != conversationID:
		problem = fmt.Sprintf("message belongs to conversation %q, not %q", m.ConversationID, conversationID)
	case m.Role == "":
		problem = "role is empty"
	case len(m.Body) == 0:
		problem = "body is empty"
	case !json.Valid(m.Body):
		problem = "body is not valid JSON"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidMessage, problem)
}

// ConversationInfo summarises one stored conversation.
type ConversationInfo struct {
	// ID is the conversation id.
	ID string
	// FirstTime and LastTime are the earliest and latest message times, UTC.
	FirstTime, LastTime time.Time
	// MessageCount is how many messages were appended to the conversation
	// (its last Seq); retention may since have deleted the oldest of them
	// from the warm store.
	MessageCount int64
}

// ConversationStore keeps conversation histories.
type ConversationStore interface {
	// AppendMessages stores msgs at the end of conversationID, assigning
	// their Seq contiguously after the last stored one, atomically: all
	// are stored or none. It returns once they are committed; on success
	// the Seq, ConversationID and zero Time of each element of msgs are
	// filled in.
	AppendMessages(ctx context.Context, conversationID string, msgs []Message) error
	// LoadMessages returns the stored messages of conversationID in Seq
	// order; none (and no error) for an unknown conversation.
	LoadMessages(ctx context.Context, conversationID string) ([]Message, error)
	// Conversations returns the most recently active conversations first,
	// at most limit of them (all when limit <= 0).
	Conversations(ctx context.Context, limit int) ([]ConversationInfo, error)
}
