package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Wire shapes of a Messages request.
type (
	messagesRequest struct {
		Model     string    `json:"model"`
		MaxTokens int       `json:"max_tokens"`
		System    string    `json:"system,omitempty"`
		Messages  []message `json:"messages"`
		Tools     []tool    `json:"tools,omitempty"`
		// Temperature and TopP are the sampling hints the API takes
		// (see sampling); absent when not given.
		Temperature *float64 `json:"temperature,omitempty"`
		TopP        *float64 `json:"top_p,omitempty"`
		Stream      bool     `json:"stream,omitempty"`
	}
	message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	// block is one content block; which fields are set depends on Type.
	block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		// Content of a tool_result: a string, or []block of text and
		// images; nil when empty.
		Content any          `json:"content,omitempty"`
		IsError bool         `json:"is_error,omitempty"`
		Source  *imageSource `json:"source,omitempty"`
	}
	// imageSource is the data of an image block.
	imageSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	tool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
)

// maxTemperature is the highest temperature the Messages API takes
// (OpenAI's goes to 2).
const maxTemperature = 1.0

// sampling is what the Messages API takes of a request's sampling hints:
// the temperature, down to maxTemperature when higher, and top_p when no
// temperature is given (Claude models since Opus 4.1 refuse the two
// together). The API has no seed and no penalties: those are not sent.
func sampling(s llm.Sampling) (temperature, topP *float64) {
	if s.Temperature == nil {
		return nil, s.TopP
	}
	t := min(*s.Temperature, maxTemperature)
	return &t, nil
}

// encodeRequest maps an llm.Request onto the wire (see the package doc).
// ConversationStart is the user message put before a history that
// starts with the assistant's.
const ConversationStart = "[conversation start]"

func encodeRequest(model string, req llm.Request, stream bool) messagesRequest {
	out := messagesRequest{Model: model, MaxTokens: req.MaxTokens, Stream: stream}
	out.Temperature, out.TopP = sampling(req.Sampling)
	var system []string
	if req.System != "" {
		system = append(system, req.System)
	}
	add := func(role string, b block) {
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, b)
			return
		}
		out.Messages = append(out.Messages, message{Role: role, Content: []block{b}})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			system = append(system, m.Content)
		case llm.RoleTool:
			b := block{Type: "tool_result", ToolUseID: m.ToolCallID, IsError: m.IsError}
			switch {
			case m.HasImages():
				// The API takes text and image blocks inside a tool_result.
				b.Content = blocks(m.Parts)
			case m.Content != "":
				b.Content = m.Content
			}
			add(llm.RoleUser, b)
		case llm.RoleAssistant:
			if m.Content != "" {
				add(llm.RoleAssistant, block{Type: "text", Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				add(llm.RoleAssistant, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: toolInput(c)})
			}
		default:
			if m.HasImages() {
				for _, b := range blocks(m.Parts) {
					add(llm.RoleUser, b)
				}
			} else if m.Content != "" {
				add(llm.RoleUser, block{Type: "text", Text: m.Content})
			}
		}
	}
	if len(out.Messages) > 0 && out.Messages[0].Role == llm.RoleAssistant {
		// The API refuses a first message that is not the user's ("first
		// message must use the \"user\" role"); a history can start with
		// the assistant's greeting (a client's replayed history).
		out.Messages = append([]message{{Role: llm.RoleUser, Content: []block{{Type: "text", Text: ConversationStart}}}}, out.Messages...)
	}
	out.System = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		schema := t.Parameters
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out.Tools = append(out.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out
}

// toolInput is a call's arguments as the object tool_use wants: the JSON
// object itself, or the model's text under "_invalid_arguments".
func toolInput(c llm.ToolCall) json.RawMessage {
	args := bytes.TrimSpace(c.Arguments)
	if c.ArgumentsError == "" && len(args) > 0 && args[0] == '{' && json.Valid(args) {
		return args
	}
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	b, _ := json.Marshal(map[string]string{"_invalid_arguments": c.ArgumentsText()})
	return b
}

// blocks are text and image blocks of parts; empty text parts are left
// out, as the API refuses empty text blocks.
func blocks(parts []llm.Part) []block {
	out := make([]block, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Type == llm.PartImage:
			out = append(out, block{Type: "image", Source: &imageSource{Type: "base64", MediaType: p.MIMEType, Data: p.Data}})
		case p.Text != "":
			out = append(out, block{Type: "text", Text: p.Text})
		}
	}
	return out
}
