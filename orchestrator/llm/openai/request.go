package openai

import (
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Wire shapes of a chat completions request.
type (
	chatRequest struct {
		Model         string         `json:"model"`
		Messages      []chatMessage  `json:"messages"`
		Tools         []chatTool     `json:"tools,omitempty"`
		MaxTokens     int            `json:"max_tokens,omitempty"`
		Stream        bool           `json:"stream,omitempty"`
		StreamOptions *streamOptions `json:"stream_options,omitempty"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	chatMessage struct {
		Role       string         `json:"role"`
		Content    string         `json:"content"`
		ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	chatToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	chatFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	chatTool struct {
		Type     string      `json:"type"`
		Function chatToolDef `json:"function"`
	}
	chatToolDef struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	}
)

// encodeRequest maps an llm.Request onto the wire. The system prompt is
// the first message; tool results are "tool" messages; an assistant
// message's tool-call arguments travel as a JSON string, as the API wants.
func encodeRequest(model string, req llm.Request, stream bool) chatRequest {
	out := chatRequest{Model: model, MaxTokens: req.MaxTokens, Stream: stream}
	if stream {
		// Without this, most servers send no usage in a stream.
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.System != "" {
		out.Messages = append(out.Messages, chatMessage{Role: llm.RoleSystem, Content: req.System})
	}
	for _, m := range req.Messages {
		cm := chatMessage{Role: m.Role, Content: m.Content}
		switch m.Role {
		case llm.RoleTool:
			cm.ToolCallID = m.ToolCallID
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chatToolCall{ID: c.ID, Type: "function",
					Function: chatFunction{Name: c.Name, Arguments: c.ArgumentsText()}})
			}
		}
		out.Messages = append(out.Messages, cm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if params == nil {
			// The API rejects a function without a parameters schema on
			// some servers; an empty object schema means "no arguments".
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: chatToolDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out
}
