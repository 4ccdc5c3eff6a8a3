package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
)

// Wire shapes of a Messages response.
type (
	messagesResponse struct {
		ID         string               `json:"id"`
		Type       string               `json:"type"`
		Model      string               `json:"model"`
		Content    []respBlock          `json:"content"`
		StopReason string               `json:"stop_reason"`
		Usage      *httpc.Report[usage] `json:"usage"`
		Error      json.RawMessage      `json:"error"`
	}
	respBlock struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	usage struct {
		InputTokens              httpc.Tokens `json:"input_tokens"`
		OutputTokens             httpc.Tokens `json:"output_tokens"`
		CacheCreationInputTokens httpc.Tokens `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     httpc.Tokens `json:"cache_read_input_tokens"`
	}
)

// parseResponse decodes a non-streamed answer.
func parseResponse(call *httpc.Call, b []byte) (llm.Response, error) {
	var r messagesResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return llm.Response{}, call.Errorf(llm.KindMalformed, 200, err, "body is not a message: %s", llm.Excerpt(string(b), 200))
	}
	if r.Type == "error" || (len(r.Error) > 0 && string(r.Error) != "null") {
		return llm.Response{}, call.Errorf(llm.KindServer, 200, nil, "error in a 2xx answer: %s", llm.Excerpt(errorMessage(b), llm.MaxErrorExcerpt))
	}
	if r.Type != "" && r.Type != "message" {
		return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "answer of type %q, want \"message\"", r.Type)
	}
	var u *usage
	if r.Usage != nil {
		u = &r.Usage.V
	}
	return finish(call, r.ID, r.Model, r.Content, r.StopReason, u)
}

// finish builds the response from the content blocks, shared by both
// transports. A tool_use id that an earlier block of the answer has is
// replaced by a stable one (httpc.StableID), from the message id respID.
func finish(call *httpc.Call, respID, model string, blocks []respBlock, stop string, u *usage) (llm.Response, error) {
	msg := llm.Message{Role: llm.RoleAssistant}
	var text strings.Builder
	seen := map[string]bool{}
	for i, bl := range blocks {
		switch bl.Type {
		case "text":
			text.WriteString(bl.Text)
		case "tool_use":
			if bl.ID == "" || bl.Name == "" {
				return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "content[%d]: tool_use without id or name", i)
			}
			args, argErr := llm.ParseArguments(bl.Input)
			id := bl.ID
			if seen[id] {
				id = httpc.StableID(respID, i, bl.Name, bl.Input, id)
			}
			seen[id] = true
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: bl.Name, Arguments: args, ArgumentsError: argErr})
		}
		// thinking and other blocks are not part of the answer.
	}
	msg.Content = text.String()
	if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) == 0 {
		return llm.Response{}, call.Errorf(llm.KindMalformed, 200, nil, "empty answer: no text and no tool_use (stop_reason %q)", stop)
	}
	resp := llm.Response{Message: msg, Model: model, FinishReason: stopReason(stop, len(msg.ToolCalls) > 0)}
	if u != nil {
		resp.Usage = llm.Usage{InputTokens: int64(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), OutputTokens: int64(u.OutputTokens)}
	}
	return resp, nil
}

// stopReason maps stop_reason onto the llm.Finish* names.
func stopReason(s string, calls bool) string {
	switch s {
	case "end_turn", "stop_sequence":
		if calls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	case "tool_use":
		return llm.FinishToolCalls
	case "max_tokens":
		return llm.FinishLength
	case "refusal":
		return llm.FinishFiltered
	case "":
		if calls {
			return llm.FinishToolCalls
		}
	}
	return s
}
