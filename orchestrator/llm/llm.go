// Package llm defines what the tool loop needs from a language model: a
// provider that completes a chat with tool definitions, and the message
// shapes of that chat. Concrete providers live in subpackages.
package llm

import (
	"context"
	"encoding/json"
)

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message. An assistant message may carry tool calls; a
// tool message answers one of them by ToolCallID.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on tool messages.
	Name string `json:"name,omitempty"`
}

// ToolCall is a model's request to run a tool. Arguments is the raw JSON the
// model produced; it may be invalid and is validated before anything runs.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// Request is one completion request.
type Request struct {
	Model     string    `json:"model,omitempty"`
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	Tools     []ToolDef `json:"tools,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"`
}

// Usage counts tokens of one completion.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Response is a completion: one assistant message, possibly with tool calls.
type Response struct {
	Message Message `json:"message"`
	Model   string  `json:"model,omitempty"`
	Usage   Usage   `json:"usage"`
}

// Provider completes chats. Complete must honour ctx cancellation and be
// safe for concurrent use.
type Provider interface {
	// Name identifies the provider in logs and the audit trail.
	Name() string
	Complete(ctx context.Context, req Request) (Response, error)
}
