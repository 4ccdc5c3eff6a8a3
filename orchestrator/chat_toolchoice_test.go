package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestChatCompletionsToolChoiceNone: tool_choice "none" offers the model
// no tools, and a call it makes all the same does not run; "auto" offers
// them. What cannot be honoured is refused.
func TestChatCompletionsToolChoiceNone(t *testing.T) {
	for _, tt := range []struct {
		choice string
		tools  bool
	}{{"none", false}, {"auto", true}} {
		t.Run(tt.choice, func(t *testing.T) {
			rec := &recorder{next: mustScript(t, readTranscript)}
			node, base, token := startAPI(t, workspace(t), Options{Provider: rec})
			resp := send(t, "POST", base+"/v1/chat/completions", token, with(completion("what does the note say?"), "tool_choice", tt.choice))
			var c ChatCompletion
			wantStatus(t, resp, 200)
			decodeBody(t, resp, &c)
			if offered := len(rec.reqs[0].Tools) > 0; offered != tt.tools {
				t.Fatalf("tools offered: %v, want %v", offered, tt.tools)
			}
			if ran := strings.Contains(c.Choices[0].Message.Content, "pump at night"); ran != tt.tools {
				t.Fatalf("the read tool ran: %v, want %v (answer %q)", ran, tt.tools, c.Choices[0].Message.Content)
			}
			res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(), `SELECT count(*) FROM tool_calls WHERE status = 'success'`)
			if err != nil {
				t.Fatal(err)
			}
			want := "[[0]]"
			if tt.tools {
				want = "[[1]]"
			}
			if got := fmt.Sprint(res.Rows); got != want {
				t.Fatalf("successful tool calls %s, want %s", got, want)
			}
		})
	}
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	for _, choice := range []any{"required", map[string]any{"type": "function", "function": map[string]any{"name": "read"}},
		map[string]any{"type": "allowed_tools"}, "sometimes", 1} {
		resp := send(t, "POST", base+"/v1/chat/completions", token, with(completion("x"), "tool_choice", choice))
		wantStatus(t, resp, 400)
		var e errorBody
		decodeBody(t, resp, &e)
		if e.Error.Param == nil || *e.Error.Param != "tool_choice" {
			t.Fatalf("tool_choice %v: %+v", choice, e.Error)
		}
	}
}

// TestChatCompletionsToolChoiceNoneClustered: on a clustered node, a named
// conversation is answered by the node that holds it, with that node's
// toolbox, so tool_choice "none" cannot be honoured for it: refused with
// a 400 naming tool_choice, before any conversation header is set, in
// the body (conversation_id) and in the header alike.
func TestChatCompletionsToolChoiceNoneClustered(t *testing.T) {
	n := &Node{cfg: Config{NodeID: "a"}, cluster: &clusterNode{}}
	for _, tc := range []struct {
		name   string
		body   map[string]any
		header string
	}{
		{"conversation_id", with(completion("x"), "tool_choice", "none", "conversation_id", "c1"), ""},
		{"header", with(completion("x"), "tool_choice", "none"), "c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(b))
			if tc.header != "" {
				req.Header.Set(ConversationHeader, tc.header)
			}
			rec := httptest.NewRecorder()
			n.handleChatCompletions(rec, req)
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
				t.Fatalf("status %d, body %q: %v", rec.Code, rec.Body, err)
			}
			if rec.Code != 400 || e.Error.Param == nil || *e.Error.Param != "tool_choice" || !strings.Contains(e.Error.Message, "clustered node") {
				t.Fatalf("status %d, error %+v", rec.Code, e.Error)
			}
			if h := rec.Header().Get(ConversationHeader); h != "" {
				t.Errorf("refusal carries %s %q", ConversationHeader, h)
			}
		})
	}
}
