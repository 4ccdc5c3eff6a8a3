package persistence

import "testing"

func TestLLMCallValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *LLMCall)
		want string // substring; empty means valid
	}{
		{"minimal", func(c *LLMCall) {}, ""},
		{"error", func(c *LLMCall) { c.Status = StatusError; c.ErrorType = "timeout" }, ""},
		{"no node", func(c *LLMCall) { c.Node = "" }, "node is empty"},
		{"no provider", func(c *LLMCall) { c.Provider = "" }, "provider is empty"},
		{"bad status", func(c *LLMCall) { c.Status = "" }, `status ""`},
		{"negative input", func(c *LLMCall) { c.InputTokens = -1 }, "token counts -1/0"},
		{"negative latency", func(c *LLMCall) { c.LatencyMs = -1 }, "latency_ms -1"},
		{"negative iteration", func(c *LLMCall) { c.Iteration = -2 }, "iteration -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := LLMCall{Node: "n", Provider: "p", Status: StatusSuccess}
			tt.edit(&c)
			wantInvalid(t, c.Validate(), ErrInvalidLLMCall, tt.want)
		})
	}
}

func TestMessageValidate(t *testing.T) {
	tests := []struct {
		name string
		conv string
		m    Message
		want string
	}{
		{"ok", "c", Message{Role: "user", Body: []byte(`{"role":"user"}`)}, ""},
		{"same conversation", "c", Message{ConversationID: "c", Role: "user", Body: []byte(`1`)}, ""},
		{"no conversation", "", Message{Role: "user", Body: []byte(`1`)}, "conversation id is empty"},
		{"other conversation", "c", Message{ConversationID: "d", Role: "user", Body: []byte(`1`)}, `"d", not "c"`},
		{"no role", "c", Message{Body: []byte(`1`)}, "role is empty"},
		{"no body", "c", Message{Role: "user"}, "body is empty"},
		{"bad body", "c", Message{Role: "user", Body: []byte(`{`)}, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantInvalid(t, tt.m.Validate(tt.conv), ErrInvalidMessage, tt.want)
		})
	}
}

func TestEventValidate(t *testing.T) {
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{"ok", Event{Node: "n", Kind: EventNodeStart}, ""},
		{"detail", Event{Node: "n", Kind: "k", Detail: []byte(`{"a":1}`)}, ""},
		{"no node", Event{Kind: "k"}, "node is empty"},
		{"no kind", Event{Node: "n"}, "kind is empty"},
		{"bad detail", Event{Node: "n", Kind: "k", Detail: []byte(`[`)}, "detail is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantInvalid(t, tt.e.Validate(), ErrInvalidEvent, tt.want)
		})
	}
}
