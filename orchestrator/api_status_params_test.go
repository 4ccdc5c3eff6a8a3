package orchestrator

import (
	"strings"
	"testing"
)

// TestCompletionTypeErrorsNameTheField: a field of the wrong JSON type is
// 400 with param naming it (with its index inside messages) and a message
// that says what is wanted.
func TestCompletionTypeErrorsNameTheField(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, tt := range []struct {
		body, param, msg string
	}{
		{`{"model":5,` + msgs + `}`, "model", "model: got a JSON number, want a string"},
		{`{"model":"evoclaw","n":"1",` + msgs + `}`, "n", "n: got a JSON string, want an integer"},
		{`{"model":"evoclaw","n":1.0,` + msgs + `}`, "n", "n: got a JSON number 1.0, want an integer"},
		{`{"model":"evoclaw","max_tokens":2.5,` + msgs + `}`, "max_tokens", "want an integer"},
		{`{"model":"evoclaw","stream":"yes",` + msgs + `}`, "stream", "stream: got a JSON string, want true or false"},
		{`{"model":"evoclaw","conversation_id":5,` + msgs + `}`, "conversation_id", "conversation_id: got a JSON number, want a string"},
		{`{"model":"evoclaw","stream_options":{"include_usage":1},` + msgs + `}`, "stream_options.include_usage", "want true or false"},
		{`{"model":"evoclaw","messages":"hi"}`, "messages", "messages: got a JSON string, want an array"},
		{`{"model":"evoclaw","messages":[{"role":"user","content":"a"},{"role":7,"content":"b"}]}`, "messages[1].role",
			"messages[1].role: got a JSON number, want a string"},
		{`{"model":"evoclaw","messages":[{"role":"user","content":"a"},"b"]}`, "messages[1]", "messages[1]: got a JSON string, want an object"},
		{`[]`, "", "body: got a JSON array, want an object"},
		{`{"model":`, "", "not valid JSON"},
	} {
		_, e := decodeChatCompletionRequest([]byte(tt.body))
		if e == nil {
			t.Errorf("%s: accepted", tt.body)
			continue
		}
		if e.Status != 400 || deref(e.Param) != tt.param || !strings.Contains(e.Message, tt.msg) {
			t.Errorf("%s: %d param %q %q; want param %q and %q", tt.body, e.Status, deref(e.Param), e.Message, tt.param, tt.msg)
		}
	}
}

// TestChatErrorsNameTheField: POST /v1/chat and /v1/chat/completions name
// the field at fault in param: a missing text, a field of the wrong type,
// an unknown field, a conversation id that is not one.
func TestChatErrorsNameTheField(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	for _, tt := range []struct {
		path  string
		body  any
		param string
		msg   string
	}{
		{"/v1/chat", `{"conversation_id":"web"}`, "text", "text: required"},
		{"/v1/chat", `{"text":"  "}`, "text", "text: required"},
		{"/v1/chat", `{"text":5}`, "text", "text: got a JSON number, want a string"},
		{"/v1/chat", `{"text":"x","stream":"yes"}`, "stream", "want true or false"},
		{"/v1/chat", `{"text":"x","conversation_id":5}`, "conversation_id", "want a string"},
		{"/v1/chat", `{"text":"x","model":"evoclaw"}`, "model", `unknown field "model"`},
		{"/v1/chat", `{"text":"x","temperature":2.5}`, "temperature", "temperature: 2.5 is out of range"},
		{"/v1/chat", `{"text":"x","seed":"7"}`, "seed", "seed: got a JSON string, want an integer"},
		{"/v1/chat", `{"text":"x","conversation_id":"a/b"}`, "conversation_id", "conversation id"},
		{"/v1/chat", `{"text":`, "", "not valid JSON"},
		{"/v1/chat/completions", with(completion("x"), "conversation_id", "a/b"), "conversation_id", "conversation id"},
		{"/v1/chat/completions", with(completion("x"), "conversation_id", "a/b", "stream", true), "conversation_id", "conversation id"},
		{"/v1/chat/completions", with(completion("x"), "n", "1"), "n", "want an integer"},
	} {
		resp := nodes.post(t, "ok", "", tt.path, tt.body)
		var e errorBody
		code := resp.StatusCode
		decodeBody(t, resp, &e)
		if code != 400 || e.Error.Type != ErrTypeInvalidRequest || deref(e.Error.Param) != tt.param || !strings.Contains(e.Error.Message, tt.msg) {
			t.Errorf("%s %v: %d %+v param %q; want 400, param %q, %q", tt.path, tt.body, code, e.Error, deref(e.Error.Param), tt.param, tt.msg)
		}
	}
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
