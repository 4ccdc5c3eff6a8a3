package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
)

// Wire shapes of a chat completions response. Content and arguments are
// raw because servers disagree on their types.
type (
	chatResponse struct {
		ID      string                   `json:"id"`
		Model   string                   `json:"model"`
		Choices []chatChoice             `json:"choices"`
		Usage   *httpc.Report[chatUsage] `json:"usage"`
		Error   json.RawMessage          `json:"error"`
	}
	chatChoice struct {
		Index        int             `json:"index"`
		Message      *respMessage    `json:"message"`
		Delta        *respMessage    `json:"delta"`
		FinishReason json.RawMessage `json:"finish_reason"`
	}
	respMessage struct {
		Role         string          `json:"role"`
		Content      json.RawMessage `json:"content"`
		ToolCalls    []respToolCall  `json:"tool_calls"`
		FunctionCall *respFunction   `json:"function_call"` // legacy single call
	}
	respToolCall struct {
		Index    *int         `json:"index"` // streaming only
		ID       flexString   `json:"id"`
		Type     string       `json:"type"`
		Function respFunction `json:"function"`
	}
	respFunction struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	chatUsage struct {
		PromptTokens     httpc.Tokens `json:"prompt_tokens"`
		CompletionTokens httpc.Tokens `json:"completion_tokens"`
	}
)

// parseResponse decodes a non-streamed answer.
func parseResponse(call *httpc.Call, b []byte) (llm.Response, error) {
	var r chatResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return llm.Response{}, call.Errorf(llm.KindMalformed, 200, err, "body is not a chat completion: %s", llm.Excerpt(string(b), 200))
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return llm.Response{}, call.Errorf(llm.KindServer, 200, nil, "error in a 2xx answer: %s", llm.Excerpt(errorMessage(b), llm.MaxErrorExcerpt))
	}
	if len(r.Choices) == 0 || r.Choices[0].Message == nil {
		return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "no choices[0].message in the answer: %s", llm.Excerpt(string(b), 200))
	}
	m := r.Choices[0].Message
	content, err := contentText(m.Content)
	if err != nil {
		return llm.Response{}, call.Errorf(llm.KindMalformed, 200, err, "choices[0].message.content")
	}
	var calls []pendingCall
	for _, c := range m.ToolCalls {
		calls = append(calls, pendingCall{id: string(c.ID), name: c.Function.Name, args: llm.ArgumentText(c.Function.Arguments)})
	}
	if m.FunctionCall != nil && len(calls) == 0 {
		calls = append(calls, pendingCall{name: m.FunctionCall.Name, args: llm.ArgumentText(m.FunctionCall.Arguments)})
	}
	return finish(call, r.ID, r.Model, content, calls, finishReason(r.Choices[0].FinishReason), r.Usage)
}

// pendingCall is a tool call as received, before normalisation.
type pendingCall struct {
	id, name string
	args     []byte
}

// finish builds the response shared by both transports: ids for calls
// without one, arguments parsed, the finish reason normalised, and an empty
// answer refused.
func finish(call *httpc.Call, respID, model, content string, calls []pendingCall, reason string, u *httpc.Report[chatUsage]) (llm.Response, error) {
	msg := llm.Message{Role: llm.RoleAssistant, Content: content}
	seen := map[string]bool{}
	for i, c := range calls {
		if c.name == "" {
			return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "tool call %d has no function name", i)
		}
		id := c.id
		if id == "" || seen[id] {
			id = httpc.StableID(respID, i, c.name, c.args, id)
		}
		seen[id] = true
		args, argErr := llm.ParseArguments(c.args)
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: c.name, Arguments: args, ArgumentsError: argErr})
	}
	if len(msg.ToolCalls) > 0 {
		switch reason {
		case "", llm.FinishStop, "function_call", "eos", "eos_token":
			// Ollama and others say "stop" beside tool calls.
			reason = llm.FinishToolCalls
		}
	} else {
		switch reason {
		case "eos", "eos_token", "end_turn":
			reason = llm.FinishStop
		}
		if strings.TrimSpace(content) == "" {
			return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "empty answer: no content and no tool calls (finish_reason %q)", reason)
		}
	}
	resp := llm.Response{Message: msg, Model: model, FinishReason: reason}
	if u != nil {
		resp.Usage = llm.Usage{InputTokens: int64(u.V.PromptTokens), OutputTokens: int64(u.V.CompletionTokens)}
	}
	return resp, nil
}

// contentText reads message content: a string, null, or a list of parts of
// which the text parts are joined.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("want a string, null or a list of parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// finishReason reads finish_reason, which may be null or absent.
func finishReason(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// flexString is a string some servers send as a number (tool-call ids).
type flexString string

// UnmarshalJSON accepts a string, a number or null.
func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*f = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string or a number: %w", err)
	}
	*f = flexString(n.String())
	return nil
}
