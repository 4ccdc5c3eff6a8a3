package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The campaign's node asks a fake OpenAI-compatible model that lives in the
// test process, so it outlives every kill of the node. Like the scenarios'
// driver it is scripted, not a language model: a user message holding a
// campaignOrder makes it call the order's tool once; a tool message makes
// it answer that message verbatim, followed by "[history N]", the user
// messages of the conversation it was sent.

// campaignOrder is the user message of one campaign chat.
type campaignOrder struct {
	Tool    string  `json:"tool"`
	Tag     string  `json:"tag"`
	File    string  `json:"file"`
	Seconds float64 `json:"seconds"`
}

// oaiMessage is the part of an OpenAI chat message the fake model reads
// and writes.
type oaiMessage struct {
	Role      string        `json:"role"`
	Content   any           `json:"content"`
	ToolCalls []oaiToolCall `json:"tool_calls,omitempty"`
}

type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// text is a message's content as text: a string, or the text parts of a
// list of parts.
func (m oaiMessage) text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok {
				if s, ok := part["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}

// startFakeModel serves the fake model at URL/v1 until the test ends.
func startFakeModel(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Messages []oaiMessage `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "fake model: want messages", http.StatusBadRequest)
			return
		}
		answer, finish := fakeModelTurn(req.Messages)
		body := map[string]any{
			"id": "chatcmpl-campaign", "object": "chat.completion", "created": time.Now().Unix(), "model": "campaign",
			"choices": []any{map[string]any{"index": 0, "message": answer, "finish_reason": finish}},
			"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// fakeModelTurn is the fake model's answer to a conversation.
func fakeModelTurn(msgs []oaiMessage) (oaiMessage, string) {
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		users := 0
		for _, m := range msgs {
			if m.Role == "user" {
				users++
			}
		}
		return oaiMessage{Role: "assistant", Content: fmt.Sprintf("%s [history %d]", last.text(), users)}, "stop"
	}
	var o campaignOrder
	if err := json.Unmarshal([]byte(last.text()), &o); err != nil || o.Tool == "" {
		return oaiMessage{Role: "assistant", Content: "fake model: the last message is no order"}, "stop"
	}
	args, _ := json.Marshal(map[string]any{"tag": o.Tag, "file": o.File, "seconds": o.Seconds}) // plain fields always marshal
	call := oaiToolCall{ID: "call-" + o.Tag, Type: "function"}
	call.Function.Name, call.Function.Arguments = o.Tool, string(args)
	return oaiMessage{Role: "assistant", Content: "", ToolCalls: []oaiToolCall{call}}, "tool_calls"
}

// chatAnswer is what POST /v1/chat answered, or that it did not.
type chatAnswer struct {
	Status int // 0: no answer (the connection failed or ended first)
	Err    string
	Body   struct {
		Text  string `json:"text"`
		Calls []struct {
			Tool    string `json:"tool"`
			Success bool   `json:"success"`
			Result  string `json:"result"`
			Error   string `json:"error"`
		} `json:"calls"`
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
}

// postChat sends one chat to the node's API.
func postChat(ctx context.Context, base, token, conv, text string) chatAnswer {
	var a chatAnswer
	b, _ := json.Marshal(map[string]string{"conversation_id": conv, "text": text}) // plain fields always marshal
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat", bytes.NewReader(b))
	if err != nil {
		a.Err = err.Error()
		return a
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.Err = err.Error()
		return a
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		// The status line came but the body was cut: not an answer.
		a.Err = "body cut: " + err.Error()
		return a
	}
	if err := json.Unmarshal(raw, &a.Body); err != nil {
		a.Err = fmt.Sprintf("status %d with a body that is not JSON: %.200q", resp.StatusCode, raw)
		return a
	}
	a.Status = resp.StatusCode
	return a
}
