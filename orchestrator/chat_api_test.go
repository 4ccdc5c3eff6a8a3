package orchestrator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
)

// TestChatStatuses: POST /v1/chat answers every failure with its status and
// the API's error body, never 200.
func TestChatStatuses(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	tests := []struct {
		name   string
		node   string
		token  string
		body   any
		status int
		typ    string
		msg    string
	}{
		{"answer", "ok", "", ChatRequest{ConversationID: "web", Text: "bob"}, 200, "", ""},
		{"no id: the server picks one", "ok", "", ChatRequest{Text: "bob"}, 200, "", ""},
		{"wrong token", "ok", "wrong-token-wrong-token", ChatRequest{Text: "x"}, 401, ErrTypeAuth, "bearer"},
		{"no text", "ok", "", ChatRequest{ConversationID: "web"}, 400, ErrTypeInvalidRequest, "text: required"},
		{"unknown field", "ok", "", `{"text":"x","model":"evoclaw"}`, 400, ErrTypeInvalidRequest, "unknown field"},
		{"malformed", "ok", "", `{"text":`, 400, ErrTypeInvalidRequest, "body"},
		{"too large", "ok", "", `{"text":"` + strings.Repeat("x", maxChatBody) + `"}`, 413, ErrTypeInvalidRequest, "larger than"},
		{"bad id", "ok", "", ChatRequest{ConversationID: "a/b", Text: "x"}, 400, ErrTypeInvalidRequest, "conversation id"},
		{"busy model queue", "overloaded", "", ChatRequest{Text: "x"}, 429, ErrTypeBusy, "overloaded"},
		{"LLM failure", "upstream", "", ChatRequest{Text: "x"}, 502, ErrTypeUpstream, "model crashed"},
		{"audit cannot write", "diskfull", "", ChatRequest{Text: "x"}, 503, ErrTypeNotReady, "disk nearly full"},
		{"timeout", "stuck", "", ChatRequest{Text: "x"}, 504, ErrTypeTimeout, "no answer within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := nodes.post(t, tt.node, tt.token, "/v1/chat", tt.body)
			wantStatus(t, resp, tt.status)
			if tt.status == 200 {
				var c ChatResponse
				decodeBody(t, resp, &c)
				if c.ConversationID == "" || c.ConversationID != resp.Header.Get(ConversationHeader) || !strings.HasPrefix(c.Text, "hello") {
					t.Fatalf("answer %+v, header %q", c, resp.Header.Get(ConversationHeader))
				}
				return
			}
			var f ChatFailure
			decodeBody(t, resp, &f)
			if f.Error.Type != tt.typ || !strings.Contains(f.Error.Message, tt.msg) {
				t.Fatalf("error %+v, want type %s and %q", f.Error, tt.typ, tt.msg)
			}
			if tt.status != 401 && tt.status != 413 && f.Status != 0 && f.Status != tt.status {
				t.Fatalf("body status %d, want %d", f.Status, tt.status)
			}
		})
	}
}

// TestChatStreaming: the SSE format `evoclaw chat` reads: conversation,
// progress..., then answer or error.
func TestChatStreaming(t *testing.T) {
	_, base, token := startAPI(t, workspace(t), Options{Provider: mustScript(t, readTranscript)})
	for _, how := range []string{"body", "accept"} {
		t.Run(how, func(t *testing.T) {
			req, headers := ChatRequest{Text: "read it"}, []string{}
			if how == "body" {
				req.Stream = true
			} else {
				headers = append(headers, "Accept", "application/json, text/event-stream")
			}
			resp := send(t, "POST", base+"/v1/chat", token, req, headers...)
			defer resp.Body.Close()
			events := readSSE(t, resp.Body)
			if resp.StatusCode != 200 || len(events) < 3 {
				t.Fatalf("status %d, events %+v", resp.StatusCode, events)
			}
			var conv struct {
				ConversationID string `json:"conversation_id"`
			}
			if events[0].name != EventConversation || json.Unmarshal([]byte(events[0].data), &conv) != nil ||
				!strings.HasPrefix(conv.ConversationID, "chat-") || conv.ConversationID != resp.Header.Get(ConversationHeader) {
				t.Fatalf("first event %+v", events[0])
			}
			var kinds []string
			for _, e := range events[1 : len(events)-1] {
				var p actors.Progress
				if e.name != EventProgress || json.Unmarshal([]byte(e.data), &p) != nil || p.ConversationID != conv.ConversationID {
					t.Fatalf("middle event %+v", e)
				}
				kinds = append(kinds, p.Kind)
			}
			if fmt.Sprint(kinds) != "[llm_start llm_end tool_start tool_end llm_start llm_end]" {
				t.Fatalf("progress %v", kinds)
			}
			last := events[len(events)-1]
			var ans ChatResponse
			if last.name != EventAnswer || json.Unmarshal([]byte(last.data), &ans) != nil || ans.Text != "the note says pump at night" ||
				ans.ToolCalls != 1 || len(ans.Calls) != 1 || ans.ConversationID != conv.ConversationID {
				t.Fatalf("last event %+v", last)
			}
		})
	}

	// Failed before the stream showed a step (the first LLM call failed):
	// a plain status. A failure after one is an error event
	// (TestStreamFailures).
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	base, token = nodes.get("upstream")
	resp := send(t, "POST", base+"/v1/chat", token, ChatRequest{ConversationID: "fails", Text: "x", Stream: true})
	var f ChatFailure
	decodeBody(t, resp, &f)
	if resp.StatusCode != 502 || f.Status != 502 || f.Error.Type != ErrTypeUpstream || f.ConversationID != "fails" {
		t.Fatalf("failed stream %d %+v", resp.StatusCode, f)
	}
	// Refused before the stream starts: a plain status.
	base, token = nodes.get("diskfull")
	resp = send(t, "POST", base+"/v1/chat", token, ChatRequest{Text: "x", Stream: true})
	decodeBody(t, resp, &f)
	if resp.StatusCode != 503 || f.Error.Type != ErrTypeNotReady {
		t.Fatalf("refused stream %d %+v", resp.StatusCode, f)
	}
}

func TestDecodeChatRequest(t *testing.T) {
	for body, want := range map[string]string{
		`{"text":"hi"}`: "",
		`{"conversation_id":"c","text":"hi","stream":true}`: "",
		`{"text":""}`:                    "text: required",
		`{"text":"hi"} {"text":"again"}`: "trailing data",
		`[]`:                             "body:",
		`{"text":"hi","extra":1}`:        "unknown field",
	} {
		_, err := decodeChatRequest([]byte(body))
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
