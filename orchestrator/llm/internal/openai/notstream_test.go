package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// TestStreamThatIsNotAnEventStream: a 200 to a streamed request whose
// body holds no event but other lines (a proxy's HTML page, a plain-text
// error) is a malformed answer that quotes the body's first line, as the
// same body is without streaming. Before, it was a "network" failure,
// "stream ended before [DONE]", retried on the same server. A body that
// is empty or cut stays a network failure.
func TestStreamThatIsNotAnEventStream(t *testing.T) {
	for _, c := range []struct {
		name, ctype, body string
		kind              llm.ErrorKind
		msg               string
	}{
		{"html", "text/html", "<html><body>Welcome to nginx!</body></html>\n", llm.KindMalformed, "not an event stream: <html><body>Welcome to nginx!"},
		{"plain text", "text/plain", "upstream connect error or disconnect/reset before headers\n", llm.KindMalformed, "not an event stream: upstream connect error"},
		{"no content type", "", "Bad Gateway", llm.KindMalformed, "not an event stream: Bad Gateway"},
		{"empty", "text/event-stream", "", llm.KindNetwork, "stream ended before [DONE]"},
		{"events cut", "text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"4\"}}]}\n\nnot sse\n", llm.KindNetwork, "stream ended before [DONE]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := llmtest.Serve(t, llmtest.Pair{ResponseHeaders: map[string]string{"Content-Type": c.ctype}, ResponseText: c.body})
			_, err := New(Options{BaseURL: s.URL + "/v1", Stream: true}).Complete(context.Background(), turn1())
			llmtest.WantError(t, err, Name, c.kind, 200, c.msg)
		})
	}
}

// TestStreamWhenNotAsked: a server that answers a request without stream
// with an event stream (a proxy set to stream) is read as a stream, as a
// JSON body to a streamed request is parsed whole. Before, the answer
// failed as malformed ("body is not a chat completion: data: ...").
func TestStreamWhenNotAsked(t *testing.T) {
	s := llmtest.Serve(t, llmtest.Pair{Stream: []json.RawMessage{
		json.RawMessage(`{"id":"r","model":"m","choices":[{"index":0,"delta":{"content":"45.6 °C"}}]}`),
		json.RawMessage(`{"id":"r","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
		json.RawMessage(`"[DONE]"`),
	}})
	r, err := New(Options{BaseURL: s.URL + "/v1"}).Complete(context.Background(), turn1())
	if err != nil || r.Message.Content != "45.6 °C" || r.FinishReason != llm.FinishStop {
		t.Fatalf("answer %+v, err %v; want 45.6 °C", r, err)
	}
}
