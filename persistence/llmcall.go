package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidLLMCall reports an LLMCall that cannot be recorded as given.
var ErrInvalidLLMCall = errors.New("invalid llm call")

// LLMCall is one completion request to a provider (cost tracking).
type LLMCall struct {
	// RecordID is the unique id of this record. Empty means the store
	// generates one with NewRecordID.
	RecordID string
	// Time is when the request finished. The store keeps it in UTC; zero
	// means the time the record is handed to the store.
	Time time.Time
	// Node is the id of the node that made the request. Required.
	Node string
	// ConversationID is the conversation the request served; may be empty.
	ConversationID string
	// Provider names the provider (e.g. "openai", "anthropic",
	// "scripted"). Required.
	Provider string
	// Model is the model asked for; may be empty when the provider has
	// only one.
	Model string
	// InputTokens and OutputTokens are the token counts the provider
	// reported; zero when it reported none. Never negative.
	InputTokens, OutputTokens int64
	// LatencyMs is how long the request took, in milliseconds; never
	// negative.
	LatencyMs int64
	// Status is StatusSuccess or StatusError. Required.
	Status string
	// ErrorType is the stable error type when Status is StatusError
	// (e.g. "timeout", "rate_limited"); empty otherwise.
	ErrorType string
	// Error is the human-readable error message; may be empty.
	Error string
	// Iteration is the tool-loop turn number, 0-based; never negative.
	Iteration int
}

// Validate reports whether c can be recorded: Node and Provider present,
// Status known, counts not negative. The error wraps ErrInvalidLLMCall.
func (c *LLMCall) Validate() error {
	var problem string
	switch {
	case c.Node == "":
		problem = "node is empty"
	case c.Provider == "":
		problem = "provider is empty"
	case c.Status != StatusSuccess && c.Status != StatusError:
		problem = fmt.Sprintf("status %q is neither %q nor %q", c.Status, StatusSuccess, StatusError)
	case c.InputTokens < 0 || c.OutputTokens < 0:
		problem = fmt.Sprintf("token counts %d/%d must not be negative", c.InputTokens, c.OutputTokens)
	case c.LatencyMs < 0:
		problem = fmt.Sprintf("latency_ms %d is negative", c.LatencyMs)
	case c.Iteration < 0:
		problem = fmt.Sprintf("iteration %d is negative", c.Iteration)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidLLMCall, problem)
}

// LLMCallLog records LLM completion requests. RecordLLMCall returns only
// after the record is committed.
type LLMCallLog interface {
	// RecordLLMCall stores c and returns once it is committed.
	RecordLLMCall(ctx context.Context, c LLMCall) error
}
