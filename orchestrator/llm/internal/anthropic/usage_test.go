package anthropic

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// TestOddUsageKeepsAnswer: a usage report the parser does not expect (a
// count written 12.0, in a string, beyond int64, a usage that is not an
// object) never fails the answer it comes with. Before, each of these
// made the answer malformed, whole or streamed, where the output count
// comes in message_delta, after the whole text.
func TestOddUsageKeepsAnswer(t *testing.T) {
	cases := append(llmtest.UsageCases("input_tokens", "output_tokens"),
		llmtest.UsageCase{Name: "cache reads", Usage: `{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":5}`, Want: llm.Usage{InputTokens: 17, OutputTokens: 3}},
		llmtest.UsageCase{Name: "huge cache reads", Usage: `{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":9223372036854775807}`, Want: llm.Usage{InputTokens: 12, OutputTokens: 3}})
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(c.Name+map[bool]string{false: "/whole", true: "/stream"}[stream], func(t *testing.T) {
				pair := llmtest.Pair{Response: json.RawMessage(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"45.6 °C"}],"stop_reason":"end_turn","usage":` + c.Usage + `}`)}
				if stream {
					// The usage goes in message_start (input) and in
					// message_delta (output), as the API sends them.
					pair = llmtest.Pair{Stream: []json.RawMessage{
						json.RawMessage(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":` + c.Usage + `}}`),
						json.RawMessage(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
						json.RawMessage(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"45.6 °C"}}`),
						json.RawMessage(`{"type":"content_block_stop","index":0}`),
						json.RawMessage(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":` + c.Usage + `}`),
						json.RawMessage(`{"type":"message_stop"}`),
					}}
				}
				s := llmtest.Serve(t, pair)
				r, err := New(Options{BaseURL: s.URL, Stream: stream}).Complete(context.Background(), turn1())
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
