package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Side values: which kind of node wrote a ToolCall.
const (
	SideOrchestrator = "orchestrator" // written by the orchestrator that asked for the call
	SideEdge         = "edge"         // written by the edge agent that ran the tool
)

// Status values: how a tool call ended.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// Sentinel errors of the persistence contract.
var (
	// ErrInvalidToolCall reports a ToolCall that cannot be recorded as given.
	ErrInvalidToolCall = errors.New("invalid tool call")
)

// ToolCall is one audited tool invocation, written by the node that saw it.
type ToolCall struct {
	// RecordID is the unique id of this record. Empty means the store
	// generates one with NewRecordID; set it when the caller needs to know it.
	RecordID string
	// Time is when the call finished. The store keeps it in UTC; zero means
	// the time the record is handed to the store.
	Time time.Time
	// Node is the id of the node writing the record (orchestrator node id or
	// edge agent id). Required.
	Node string
	// Side is SideOrchestrator or SideEdge. Required.
	Side string
	// ConversationID is the conversation the call belongs to; may be empty.
	ConversationID string
	// RequestID is the wire request_id linking orchestrator and edge records;
	// may be empty.
	RequestID string
	// CallID is the LLM's tool_call id (orchestrator side); may be empty.
	CallID string
	// AgentID is the edge agent that ran (or was asked to run) the tool; may
	// be empty.
	AgentID string
	// Tool is the tool name. Required.
	Tool string
	// Params holds the arguments as JSON. Empty means none (stored as NULL);
	// anything else must be valid JSON.
	Params json.RawMessage
	// Status is StatusSuccess or StatusError. Required.
	Status string
	// ErrorType is the stable error type when Status is StatusError
	// (e.g. "timeout"); empty otherwise.
	ErrorType string
	// Error is the human-readable error message; may be empty.
	Error string
	// ExitCode is the process exit code when a process ran; nil when none ran.
	ExitCode *int
	// ElapsedMs is how long the call took as the writer observed it, in
	// milliseconds; never negative. On the orchestrator's rows it is the
	// round trip from sending the command to the result or the timeout.
	ElapsedMs int64
	// AgentElapsedMs is the elapsed time the edge agent reported in its
	// result, in milliseconds, on rows of calls an agent answered; nil
	// when none was reported (timeouts, local tools, the edge's own rows,
	// whose ElapsedMs is its own figure).
	AgentElapsedMs *int64
	// ResultExcerpt is the start of the result: at most MaxExcerptBytes of
	// valid UTF-8. Stores pass longer or invalid values through Excerpt.
	ResultExcerpt string
	// ResultBytes is the full size of the result in bytes; never negative.
	ResultBytes int64
	// FinishesRun, when set, names the request of the request log
	// (BeginRun) whose run this record ends: the store marks it done in
	// the record's own transaction, so a crash never leaves the log
	// saying the run is still going once its record exists, nor the
	// other way round. It is not stored in the record.
	FinishesRun string
}

// Validate reports whether c can be recorded: required fields present, Side
// and Status known, Params valid JSON, sizes not negative. The error wraps
// ErrInvalidToolCall.
func (c *ToolCall) Validate() error {
	var problem string
	switch {
	case c.Node == "":
		problem = "node is empty"
	case c.Side != SideOrchestrator && c.Side != SideEdge:
		problem = fmt.Sprintf("side %q is neither %q nor %q", c.Side, SideOrchestrator, SideEdge)
	case c.Tool == "":
		problem = "tool is empty"
	case c.Status != StatusSuccess && c.Status != StatusError:
		problem = fmt.Sprintf("status %q is neither %q nor %q", c.Status, StatusSuccess, StatusError)
	case len(c.Params) > 0 && !json.Valid(c.Params):
		problem = "params is not valid JSON"
	case c.ElapsedMs < 0:
		problem = fmt.Sprintf("elapsed_ms %d is negative", c.ElapsedMs)
	case c.AgentElapsedMs != nil && *c.AgentElapsedMs < 0:
		problem = fmt.Sprintf("agent_elapsed_ms %d is negative", *c.AgentElapsedMs)
	case c.ResultBytes < 0:
		problem = fmt.Sprintf("result_bytes %d is negative", c.ResultBytes)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidToolCall, problem)
}

// AuditLog records tool calls. RecordToolCall returns only after the record
// is committed (durable per the store's sync setting).
type AuditLog interface {
	// RecordToolCall stores c and returns once it is committed.
	RecordToolCall(ctx context.Context, c ToolCall) error
	// Close flushes pending records and releases the log; it is idempotent.
	Close() error
}
