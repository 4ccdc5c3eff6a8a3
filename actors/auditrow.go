package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
)

// CallRef names a tool call in the audit trail: who writes the row and
// which call it is.
type CallRef struct {
	// Node writes the row as Side (persistence.SideOrchestrator or SideEdge).
	Node, Side     string
	ConversationID string
	// RequestID is the wire request_id that joins both sides' rows.
	RequestID string
	// CallID is the model's id of the call (orchestrator side).
	CallID  string
	AgentID string
	// Tool is the name the caller used; empty: "(unknown)".
	Tool string
	// Params are the call's arguments, kept when they are valid JSON.
	Params json.RawMessage
	// Elapsed is how long the call took as the writer observed it (the
	// orchestrator: from dispatching the command to the result or the
	// timeout). Zero means the result's own Elapsed is the writer's
	// figure (the edge side, which ran the tool).
	Elapsed time.Duration
	// AgentReported says the result is an edge agent's answer: its Elapsed
	// is the agent's own figure, kept beside the observed one.
	AgentReported bool
}

// AuditRow is the audit record of a call that ended with res at time at.
// It is the one place a tool call's row is built, on either side, so both
// sides record the same fields the same way.
func AuditRow(ref CallRef, res skills.Output, at time.Time) persistence.ToolCall {
	text := auditText(res) // images as type, size and hash
	rec := persistence.ToolCall{
		Time:           at.UTC(),
		Node:           ref.Node,
		Side:           ref.Side,
		ConversationID: ref.ConversationID,
		RequestID:      ref.RequestID,
		CallID:         ref.CallID,
		AgentID:        ref.AgentID,
		Tool:           ref.Tool,
		Status:         statusOf(res),
		ErrorType:      string(res.ErrorType()),
		Error:          res.ErrorText(),
		ExitCode:       res.ExitCode,
		ElapsedMs:      max(res.Elapsed.Milliseconds(), 0),
		ResultExcerpt:  persistence.Excerpt(text),
		ResultBytes:    max(int64(len(text)), res.ResultBytes),
	}
	if ref.Elapsed > 0 {
		rec.ElapsedMs = ref.Elapsed.Milliseconds()
	}
	if ref.AgentReported {
		ms := max(res.Elapsed.Milliseconds(), 0)
		rec.AgentElapsedMs = &ms
	}
	if rec.Tool == "" {
		rec.Tool = "(unknown)"
	}
	if len(ref.Params) > MaxArgsBytes {
		rec.Params = OmittedParams(ref.Params)
	} else if len(ref.Params) > 0 && json.Valid(ref.Params) {
		rec.Params = ref.Params
	}
	return rec
}

// OmittedParams is what a row keeps of arguments past MaxArgsBytes (a
// call refused for them), or of any a caller chooses not to keep whole:
// their size and SHA-256.
func OmittedParams(args json.RawMessage) json.RawMessage {
	sum := sha256.Sum256(args)
	b, _ := json.Marshal(map[string]any{"evoclaw_omitted": "arguments larger than the limit", "bytes": len(args), "sha256": hex.EncodeToString(sum[:])})
	return b
}
