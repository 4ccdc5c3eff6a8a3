package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// TestOddUsageKeepsAnswer: a usage report the parser does not expect (a
// count written 12.0, in a string, beyond int64, a usage that is not an
// object) never fails the answer it comes with. Before, each of these
// made the answer malformed, whole or streamed, where the usage comes in
// the last chunk, after the whole answer.
func TestOddUsageKeepsAnswer(t *testing.T) {
	for _, c := range llmtest.UsageCases("prompt_tokens", "completion_tokens") {
		for _, stream := range []bool{false, true} {
			t.Run(c.Name+map[bool]string{false: "/whole", true: "/stream"}[stream], func(t *testing.T) {
				pair := llmtest.Pair{Response: json.RawMessage(`{"id":"r","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"45.6 °C"},"finish_reason":"stop"}],"usage":` + c.Usage + `}`)}
				if stream {
					pair = llmtest.Pair{Stream: []json.RawMessage{
						json.RawMessage(`{"id":"r","model":"m","choices":[{"index":0,"delta":{"content":"45.6 °C"}}]}`),
						json.RawMessage(`{"id":"r","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
						json.RawMessage(`{"id":"r","choices":[],"usage":` + c.Usage + `}`),
						json.RawMessage(`"[DONE]"`),
					}}
				}
				s := llmtest.Serve(t, pair)
				r, err := New(Options{BaseURL: s.URL + "/v1", Stream: stream}).Complete(context.Background(), turn1())
				if err != nil {
					t.Fatalf("usage %s failed the answer: %v", c.Usage, err)
				}
				if r.Message.Content != "45.6 °C" || r.Usage != c.Want {
					t.Fatalf("content %q usage %+v, want 45.6 °C and %+v", r.Message.Content, r.Usage, c.Want)
				}
			})
		}
	}
}
