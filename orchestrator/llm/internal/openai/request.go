package openai

import (
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Wire shapes of a chat completions request.
type (
	chatRequest struct {
		Model     string        `json:"model"`
		Messages  []chatMessage `json:"messages"`
		Tools     []chatTool    `json:"tools,omitempty"`
		MaxTokens int           `json:"max_tokens,omitempty"`
		// The sampling hints, as given; absent when not.
		Temperature      *float64       `json:"temperature,omitempty"`
		TopP             *float64       `json:"top_p,omitempty"`
		FrequencyPenalty *float64       `json:"frequency_penalty,omitempty"`
		PresencePenalty  *float64       `json:"presence_penalty,omitempty"`
		Seed             *int64         `json:"seed,omitempty"`
		Stream           bool           `json:"stream,omitempty"`
		StreamOptions    *streamOptions `json:"stream_options,omitempty"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	chatMessage struct {
		Role string `json:"role"`
		// Content is a string, or []chatPart for a message with images.
		Content    any            `json:"content"`
		ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	// chatPart is one part of a content array: text or an image_url.
	chatPart struct {
		Type     string    `json:"type"`
		Text     string    `json:"text,omitempty"`
		ImageURL *imageURL `json:"image_url,omitempty"`
	}
	imageURL struct {
		URL string `json:"url"`
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
//
// Images travel as image_url parts holding data URLs. A tool message's
// content may only be text, so the images of the tool results of one turn
// follow them in one user message, each introduced by a text naming the
// call it belongs to (the tool messages say their images are there). A
// user message with images (tool results written as text in prompt tool
// mode) has a content array of its text and images.
//
// The sampling hints the request has go as they are (llama.cpp, Ollama,
// vLLM and LM Studio take them all); those it has not are left out, to
// the server's own settings.
func encodeRequest(model string, req llm.Request, stream bool) chatRequest {
	s := req.Sampling
	out := chatRequest{Model: model, MaxTokens: req.MaxTokens, Stream: stream, Temperature: s.Temperature, TopP: s.TopP,
		FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty, Seed: s.Seed}
	if stream {
		// Without this, most servers send no usage in a stream.
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.System != "" {
		out.Messages = append(out.Messages, chatMessage{Role: llm.RoleSystem, Content: req.System})
	}
	var images []llm.Message // tool results of this turn with images
	for i, m := range req.Messages {
		cm := chatMessage{Role: m.Role, Content: m.Content}
		switch m.Role {
		case llm.RoleTool:
			cm.ToolCallID = m.ToolCallID
			if m.HasImages() {
				cm.Content = toolText(m)
				images = append(images, m)
			}
		case llm.RoleUser:
			if m.HasImages() {
				cm.Content = contentParts(m.Parts)
			}
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chatToolCall{ID: c.ID, Type: "function",
					Function: chatFunction{Name: c.Name, Arguments: c.ArgumentsText()}})
			}
		}
		out.Messages = append(out.Messages, cm)
		if len(images) > 0 && (i+1 == len(req.Messages) || req.Messages[i+1].Role != llm.RoleTool) {
			out.Messages = append(out.Messages, chatMessage{Role: llm.RoleUser, Content: resultImages(images)})
			images = nil
		}
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

// toolText is a tool result's text for a message that cannot hold images:
// its text parts, with each image named as sent in the next message.
func toolText(m llm.Message) string {
	var b strings.Builder
	n := 0
	for _, p := range m.Parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch p.Type {
		case llm.PartImage:
			n++
			fmt.Fprintf(&b, "[image %d: %s, %d base64 bytes, in the next message]", n, p.MIMEType, len(p.Data))
		default:
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// resultImages is the content of the user message after a turn's tool
// messages: for each result with images, a text naming its call, then its
// images.
func resultImages(results []llm.Message) []chatPart {
	var out []chatPart
	for _, m := range results {
		label := "Images of the result of tool call " + m.ToolCallID
		if m.Name != "" {
			label += " (" + m.Name + ")"
		}
		out = append(out, chatPart{Type: "text", Text: label + ":"})
		for _, p := range m.Parts {
			if p.Type == llm.PartImage {
				out = append(out, imagePart(p))
			}
		}
	}
	return out
}

// contentParts is a content array of parts; empty text parts are left out.
func contentParts(parts []llm.Part) []chatPart {
	out := make([]chatPart, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Type == llm.PartImage:
			out = append(out, imagePart(p))
		case p.Text != "":
			out = append(out, chatPart{Type: "text", Text: p.Text})
		}
	}
	return out
}

func imagePart(p llm.Part) chatPart {
	return chatPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + p.MIMEType + ";base64," + p.Data}}
}
