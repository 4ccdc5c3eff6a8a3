package wire

import (
	"encoding/json"
	"fmt"
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
