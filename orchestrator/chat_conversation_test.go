package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestChatLogCutsClientInput: a long conversation id, in the body or the
// header of either chat endpoint, is logged cut (its first bytes, its
// length, a hash), not whole.
func TestChatLogCutsClientInput(t *testing.T) {
	logs := &testenv.Buffer{}
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript), Logger: logs.Logger(slog.LevelDebug)})
	long := strings.Repeat("a", 900<<10)
	short := strings.Repeat("b", 8<<10) // a header is bounded at 16 KiB
	tests := []struct {
		name, path string
		body       any
		header     string
		size       int
	}{
		{"chat body", "/v1/chat", ChatRequest{ConversationID: long, Text: "x"}, "", len(long)},
		{"chat header", "/v1/chat", ChatRequest{Text: "x"}, short, len(short)},
		{"completions body", "/v1/chat/completions", with(completion("x"), "conversation_id", long), "", len(long)},
		{"completions header", "/v1/chat/completions", completion("x"), short, len(short)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(logs.String())
			var headers []string
			if tt.header != "" {
				headers = []string{ConversationHeader, tt.header}
			}
			resp := send(t, "POST", base+tt.path, token, tt.body, headers...)
			wantStatus(t, resp, 400)
			resp.Body.Close()
			lines := logs.String()[before:]
			if !strings.Contains(lines, fmt.Sprintf("…(%d bytes) sha256:", tt.size)) {
				t.Fatalf("no cut id in the log: %.300s", lines)
			}
			for _, line := range strings.Split(lines, "\n") {
				if len(line) > 1024 {
					t.Fatalf("log line of %d bytes: %.200s...", len(line), line)
				}
			}
		})
	}
}

// TestChatConversationHeaderEchoesValidIDsOnly: a conversation id that is
// refused is not echoed in the response header (a NUL or a 900 KB value
// there broke clients before they read the 400).
func TestChatConversationHeaderEchoesValidIDsOnly(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	long := strings.Repeat("a", 900<<10)
	tests := []struct {
		name, path string
		body       any
		header     string
		param      string // "" for null
	}{
		{"chat NUL", "/v1/chat", ChatRequest{ConversationID: "a\x00b", Text: "x"}, "", "conversation_id"},
		{"chat long", "/v1/chat", ChatRequest{ConversationID: long, Text: "x"}, "", "conversation_id"},
		{"chat header", "/v1/chat", ChatRequest{Text: "x"}, "a.b", ""},
		{"completions NUL", "/v1/chat/completions", with(completion("x"), "conversation_id", "a\x00b"), "", "conversation_id"},
		{"completions long", "/v1/chat/completions", with(completion("x"), "conversation_id", long), "", "conversation_id"},
		{"completions header", "/v1/chat/completions", completion("x"), "a.b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var headers []string
			if tt.header != "" {
				headers = []string{ConversationHeader, tt.header}
			}
			resp := send(t, "POST", base+tt.path, token, tt.body, headers...)
			wantStatus(t, resp, 400)
			if h, ok := resp.Header[ConversationHeader]; ok {
				t.Fatalf("refused id echoed in %s (%d bytes)", ConversationHeader, len(h[0]))
			}
			var e errorBody
			decodeBody(t, resp, &e)
			got := ""
			if e.Error.Param != nil {
				got = *e.Error.Param
			}
			if e.Error.Type != ErrTypeInvalidRequest || got != tt.param || !strings.Contains(e.Error.Message, "conversation id") || len(e.Error.Message) > 300 {
				t.Fatalf("error %+v, want param %q", e.Error, tt.param)
			}
		})
	}
}

// TestChatConversationHeader: POST /v1/chat takes the conversation from
// the header too, as /v1/chat/completions does: both must agree.
func TestChatConversationHeader(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	tests := []struct {
		name, body, header string
		status             int
		want               string
	}{
		{"header", "", "kitchen", 200, "kitchen"},
		{"both agree", "kitchen", "kitchen", 200, "kitchen"},
		{"body", "kitchen", "", 200, "kitchen"},
		{"disagree", "kitchen", "garden", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var headers []string
			if tt.header != "" {
				headers = []string{ConversationHeader, tt.header}
			}
			resp := send(t, "POST", base+"/v1/chat", token, ChatRequest{ConversationID: tt.body, Text: "x"}, headers...)
			wantStatus(t, resp, tt.status)
			if tt.status != 200 {
				var f ChatFailure
				decodeBody(t, resp, &f)
				if f.Error.Param == nil || *f.Error.Param != "conversation_id" || !strings.Contains(f.Error.Message, "different conversations") {
					t.Fatalf("error %+v", f.Error)
				}
				return
			}
			var c ChatResponse
			decodeBody(t, resp, &c)
			if c.ConversationID != tt.want || resp.Header.Get(ConversationHeader) != tt.want {
				t.Fatalf("conversation %q, header %q, want %q", c.ConversationID, resp.Header.Get(ConversationHeader), tt.want)
			}
		})
	}
}

// TestChatErrorMessageHistoryTimeout: a history write that ended at its
// deadline may still commit; the error says so and names the
// conversation. Other failures are told as they are.
func TestChatErrorMessageHistoryTimeout(t *testing.T) {
	tests := []struct {
		err   error
		maybe bool
	}{
		{fmt.Errorf("%w: store 3 messages of c1: %w", actors.ErrHistory, context.DeadlineExceeded), true},
		{fmt.Errorf("%w: store 3 messages of c1 after the write before them: %w", actors.ErrHistory, context.DeadlineExceeded), true},
		{fmt.Errorf("%w: store 3 messages of c1: %w", actors.ErrHistory, errors.New("disk I/O error")), false},
		{fmt.Errorf("llm: %w", context.DeadlineExceeded), false},
	}
	for _, tt := range tests {
		for _, msg := range []string{chatErrorMessage("c1", tt.err), func() string { _, f := chatFailure("c1", nil, tt.err); return f.Error.Message }()} {
			if got := strings.Contains(msg, "may still complete") && strings.Contains(msg, "c1") && strings.Contains(msg, ConversationHeader); got != tt.maybe {
				t.Errorf("%v: %q", tt.err, msg)
			}
		}
	}
}
