package anthropic

import (
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// TestStreamEndsAfterStopReason: a stream that has sent message_delta
// with its stop_reason (every block complete) but neither message_stop
// nor the end of the body gives its answer once the grace passes without
// an event (half the idle timeout here, shorter than httpc.FinishGrace), pings
// or heartbeats or not. Before, the whole answer was lost to the idle
// timeout, or to the call's timeout while heartbeats came.
func TestStreamEndsAfterStopReason(t *testing.T) {
	const idle = 300 * time.Millisecond
	answer := streamHead + textDelta("45.6 °C") +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n"
	ping := "event: ping\ndata: {\"type\":\"ping\"}\n\n"
	for _, c := range []struct {
		name  string
		steps []llmtest.Step
	}{
		{"silence", []llmtest.Step{{Text: answer}}},
		{"heartbeats", append([]llmtest.Step{{Text: answer}}, llmtest.Heartbeats(40, idle/4)...)},
		{"a ping, then silence", []llmtest.Step{{Text: answer}, {Wait: idle / 4, Text: ping}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := llmtest.Script(t, c.steps...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r, err := New(Options{BaseURL: s.URL, Stream: true, IdleTimeout: idle}).Complete(ctx, turn1())
			if err != nil {
				t.Fatalf("err = %v, want the answer", err)
			}
			if r.Message.Content != "45.6 °C" || r.FinishReason != llm.FinishStop || r.Usage != (llm.Usage{InputTokens: 1, OutputTokens: 3}) {
				t.Fatalf("answer %q finish %q usage %+v", r.Message.Content, r.FinishReason, r.Usage)
			}
		})
	}
}

// TestFirstChunkLate: the idle timeout counts from the answer's first
// byte, not from the headers (see llmtest.FirstChunkLate).
func TestFirstChunkLate(t *testing.T) {
	llmtest.FirstChunkLate(t, func(url string, stream bool, idle time.Duration) llm.Provider {
		return New(Options{BaseURL: url, Stream: stream, IdleTimeout: idle})
	}, turn1(), streamHead+textDelta("45.6 °C")+
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n"+
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "45.6 °C")
}
