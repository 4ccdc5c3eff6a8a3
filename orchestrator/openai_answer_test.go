package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// answerProvider answers a chat by its last user message: "<finish>:<text>"
// is answered text with that finish reason, as a model server sends it.
func answerProvider() funcProvider {
	return func(_ context.Context, req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		finish, text, _ := strings.Cut(last, ":")
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, FinishReason: finish,
			Usage: llm.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}
}

// answerOf posts body to /v1/chat/completions, streamed or not, and returns
// the answer's text and finish reason as a client assembles them.
func answerOf(t *testing.T, base, token string, body map[string]any, stream bool) (string, string) {
	t.Helper()
	resp := send(t, "POST", base+"/v1/chat/completions", token, with(body, "stream", stream))
	wantStatus(t, resp, 200)
	if !stream {
		var c ChatCompletion
		decodeBody(t, resp, &c)
		if len(c.Choices) != 1 {
			t.Fatalf("answer %+v", c)
		}
		return c.Choices[0].Message.Content, c.Choices[0].FinishReason
	}
	defer resp.Body.Close()
	cs, raw := chunks(t, readSSE(t, resp.Body))
	if raw[len(raw)-1] != "[DONE]" {
		t.Fatalf("stream %v", raw)
	}
	var text, finish string
	for _, c := range cs {
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return text, finish
}

// TestChatCompletionsFinishReason: the answer's finish_reason is the final
// completion's: an answer the model server cut at max_tokens is "length",
// one its filter cut is "content_filter", streamed or not; any other
// reason of the server's is "stop".
func TestChatCompletionsFinishReason(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: answerProvider()})
	for _, tt := range []struct {
		ask, text, finish string
	}{
		{"stop:a whole answer", "a whole answer", "stop"},
		{"length:cut sho", "cut sho", "length"},
		{"content_filter:partial", "partial", "content_filter"},
		{"eos:a local server's reason", "a local server's reason", "stop"},
		{":no reason given", "no reason given", "stop"},
	} {
		for _, stream := range []bool{false, true} {
			text, finish := answerOf(t, base, token, completion(tt.ask), stream)
			if text != tt.text || finish != tt.finish {
				t.Errorf("%q (stream %v): text %q finish %q, want %q %q", tt.ask, stream, text, finish, tt.text, tt.finish)
			}
		}
	}
}

// TestChatCompletionsStop: the answer ends before the first stop sequence
// it holds (the one found earliest, not the one listed first), which
// makes its finish "stop", streamed or not; an answer without one is
// whole.
func TestChatCompletionsStop(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: answerProvider()})
	for _, tt := range []struct {
		ask          string
		stop         any
		text, finish string
	}{
		{"stop:Hello. World. END here", "World", "Hello. ", "stop"},
		{"stop:Hello. World. END here", []string{"END", "."}, "Hello", "stop"},
		{"length:one\ntwo thr", []string{"\n"}, "one", "stop"},
		{"length:one two thr", []string{"\n", "four"}, "one two thr", "length"},
		{"stop:at once", "at", "", "stop"},
		{"stop:untouched", nil, "untouched", "stop"},
	} {
		for _, stream := range []bool{false, true} {
			text, finish := answerOf(t, base, token, with(completion(tt.ask), "stop", tt.stop), stream)
			if text != tt.text || finish != tt.finish {
				t.Errorf("%q stop %q (stream %v): text %q finish %q, want %q %q", tt.ask, tt.stop, stream, text, finish, tt.text, tt.finish)
			}
		}
	}
}

// TestNoCORS: a browser's preflight from another origin is answered 405 in
// the error shape, with no Access-Control-Allow-* header, on the OpenAI
// endpoints (docs/API.md): CORS is not enabled.
func TestNoCORS(t *testing.T) {
	_, base, _ := startAPI(t, nil, Options{Provider: answerProvider()})
	for _, path := range []string{"/v1/chat/completions", "/v1/models", "/v1/models/evoclaw"} {
		resp := send(t, "OPTIONS", base+path, "", nil, "Origin", "http://app.example", "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type")
		for k := range resp.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s: preflight answered %s", path, k)
			}
		}
		var e errorBody
		decodeBody(t, resp, &e)
		if resp.StatusCode != 405 || e.Error.Type != ErrTypeInvalidRequest || resp.Header.Get("Allow") == "" {
			t.Errorf("%s: preflight %d %+v, Allow %q", path, resp.StatusCode, e, resp.Header.Get("Allow"))
		}
	}
}
