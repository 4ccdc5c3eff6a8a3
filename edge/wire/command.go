package wire

import (
	"encoding/json"
	"fmt"
	"time"
)

// Command names understood by evoclaw edge agents. The public EvoClaw agent
// dispatches more (update_strategy, trade, ...); an agent answers any command
// it does not handle with an error report rather than silence.
const (
	CmdPing       = "ping"
	CmdTool       = "tool"
	CmdToolsList  = "tools_list"
	CmdPrompt     = "prompt"
	CmdExecute    = "execute"
	CmdGetMetrics = "get_metrics"
	CmdShutdown   = "shutdown"
)

// Command is a message on evoclaw/agents/{id}/commands.
type Command struct {
	Command   string          `json:"command"`
	Payload   json.RawMessage `json:"payload"`
	RequestID string          `json:"request_id"`
	// ExpiresAt is an evoclaw extension: the time, in Unix milliseconds by
	// the sender's clock, after which the command must not start. Zero
	// means it never expires. Other agents ignore it. See docs/WIRE.md for
	// the clock assumptions.
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// TTLMS is an evoclaw extension: the command's lifetime in milliseconds
	// from when it was sent. An agent whose clock is not set yet measures it
	// from when the command arrived instead of trusting ExpiresAt. Zero
	// means none.
	TTLMS int64 `json:"ttl_ms,omitempty"`
}

// DefaultExpiryMargin is what SetExpiry adds to the caller's timeout by
// default: room for the round trip and for clocks a little apart, so that a
// command is not refused as expired while its caller still waits.
const DefaultExpiryMargin = 5 * time.Second

// SetExpiry makes c expire timeout+margin after now (margin zero:
// DefaultExpiryMargin): it sets ExpiresAt and TTLMS. The orchestrator
// calls it with the time it publishes and the timeout it waits for the
// answer. A timeout of zero or less leaves c without expiry.
func (c *Command) SetExpiry(now time.Time, timeout, margin time.Duration) {
	if timeout <= 0 {
		c.ExpiresAt, c.TTLMS = 0, 0
		return
	}
	if margin <= 0 {
		margin = DefaultExpiryMargin
	}
	ttl := timeout + margin
	c.ExpiresAt = now.Add(ttl).UnixMilli()
	c.TTLMS = ttl.Milliseconds()
}

// ToolPayload is the payload of a "tool" command.
type ToolPayload struct {
	Tool       string          `json:"tool"`
	Parameters json.RawMessage `json:"parameters"`
	// TimeoutMS is the caller's deadline for the run in milliseconds; zero
	// means the tool's own default.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// RequestID repeats the envelope's request_id (the spec puts it in both).
	RequestID string `json:"request_id,omitempty"`
	// ConversationID is an evoclaw extension that lets the edge agent's audit
	// row name the conversation; other agents ignore it.
	ConversationID string `json:"conversation_id,omitempty"`
	// StreamOutput is an evoclaw extension: the caller wants the output of
	// the running tool as progress reports (ReportProgress) before the
	// result. An agent that does not know it ignores it and only sends the
	// result; false, the default, means no progress reports.
	StreamOutput bool `json:"stream_output,omitempty"`
	// StartGate is an evoclaw extension (startgate.go): the agent records
	// the request, sends an "accepted" report and runs the tool only once
	// the orchestrator answers with a "start" command that says run. Sent
	// only to agents whose online status lists FeatureStartGate.
	StartGate bool `json:"start_gate,omitempty"`
}

// PromptPayload is the payload of a "prompt" command.
type PromptPayload struct {
	Prompt       string `json:"prompt"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	EnableTools  bool   `json:"enable_tools"`
	MaxTokens    int    `json:"max_tokens,omitempty"`
}

// DecodeCommand parses and validates a command message.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	if err := decodeObject("command", b, &c); err != nil {
		return Command{}, err
	}
	if c.Command == "" {
		return Command{}, &DecodeError{What: "command", Field: "command", Msg: "required"}
	}
	if err := checkRequestID("command", c.RequestID, true); err != nil {
		return Command{}, err
	}
	if c.ExpiresAt < 0 {
		return Command{}, &DecodeError{What: "command", Field: "expires_at", Msg: "must not be negative"}
	}
	if c.TTLMS < 0 {
		return Command{}, &DecodeError{What: "command", Field: "ttl_ms", Msg: "must not be negative"}
	}
	p, err := objectOrEmpty("command", "payload", c.Payload)
	if err != nil {
		return Command{}, err
	}
	c.Payload = p
	return c, nil
}

// DecodeToolPayload parses the payload of a "tool" command.
func DecodeToolPayload(b []byte) (ToolPayload, error) {
	var p ToolPayload
	if err := decodeObject("tool payload", b, &p); err != nil {
		return ToolPayload{}, err
	}
	if p.Tool == "" {
		return ToolPayload{}, &DecodeError{What: "tool payload", Field: "tool", Msg: "required"}
	}
	if p.TimeoutMS < 0 {
		return ToolPayload{}, &DecodeError{What: "tool payload", Field: "timeout_ms", Msg: "must not be negative"}
	}
	params, err := objectOrEmpty("tool payload", "parameters", p.Parameters)
	if err != nil {
		return ToolPayload{}, err
	}
	p.Parameters = params
	return p, nil
}

// DecodePromptPayload parses the payload of a "prompt" command.
func DecodePromptPayload(b []byte) (PromptPayload, error) {
	var p PromptPayload
	if err := decodeObject("prompt payload", b, &p); err != nil {
		return PromptPayload{}, err
	}
	if p.Prompt == "" {
		return PromptPayload{}, &DecodeError{What: "prompt payload", Field: "prompt", Msg: "required"}
	}
	if p.MaxTokens < 0 {
		return PromptPayload{}, &DecodeError{What: "prompt payload", Field: "max_tokens", Msg: "must not be negative"}
	}
	return p, nil
}

// NewCommand builds a command with its payload marshalled to JSON.
func NewCommand(name, requestID string, payload any) (Command, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return Command{}, fmt.Errorf("marshal %s payload: %w", name, err)
	}
	return Command{Command: name, Payload: b, RequestID: requestID}, nil
}
