package openai

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// TestStreamEndsAfterFinishReason: a stream that has sent its
// finish_reason (in a chunk of its own, as servers do) but neither [DONE]
// nor the end of the body gives its answer once the grace passes without
// an event (half the idle timeout here, shorter than httpc.FinishGrace),
// heartbeats or not; a usage chunk within the grace is taken; a deadline
// or a dropped connection after it keeps the answer too. A finish_reason
// beside text gets no grace, as it may be one of a server that sends one
// with every chunk (some proxies do), whose slow model's next token may
// take longer than the grace: it loses nothing, and the stream ends with
// the answer at the idle timeout or the deadline. Before, the whole answer
// was lost to the idle timeout, or to the deadline while heartbeats came.
func TestStreamEndsAfterFinishReason(t *testing.T) {
	const idle = 300 * time.Millisecond
	text := func(s, finish string) string {
		return `data: {"id":"r","model":"m","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":` + finish + `}]}` + "\n\n"
	}
	answer := text("It is ", "null") + text("45.6 °C", "null") + `data: {"id":"r","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	beats := llmtest.Heartbeats(400, idle/4) // 30 s of comment lines
	for _, c := range []struct {
		name   string
		steps  []llmtest.Step
		within time.Duration // the caller's deadline; 0: 10 s
		usage  llm.Usage
	}{
		{"silence", []llmtest.Step{{Text: answer}}, 0, llm.Usage{}},
		{"heartbeats", append([]llmtest.Step{{Text: answer}}, beats...), 0, llm.Usage{}},
		{"late usage", []llmtest.Step{{Text: answer}, {Wait: idle / 3, Text: `data: {"id":"r","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":3}}` + "\n\n"}}, 0, llm.Usage{InputTokens: 82, OutputTokens: 3}},
		{"deadline within the grace", []llmtest.Step{{Text: answer}}, idle / 4, llm.Usage{}},
		{"connection dropped after it", []llmtest.Step{{Text: answer, Cut: true}}, 0, llm.Usage{}},
		// Each gap is longer than the grace (idle/2) but shorter than idle.
		{"finish_reason on every chunk", []llmtest.Step{{Text: text("It ", `"stop"`)}, {Wait: 2 * idle / 3, Text: text("is ", `"stop"`)}, {Wait: 2 * idle / 3, Text: text("45.6", `"stop"`)}, {Wait: 2 * idle / 3, Text: text(" °C", `"stop"`)}}, 0, llm.Usage{}},
		{"finish_reason beside the last text", []llmtest.Step{{Text: text("It is ", "null")}, {Wait: idle / 3, Text: text("45.6 °C", `"stop"`)}}, 0, llm.Usage{}},
		{"finish_reason beside the last text, heartbeats", append([]llmtest.Step{{Text: text("It is ", "null") + text("45.6 °C", `"stop"`)}}, beats...), time.Second, llm.Usage{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := llmtest.Script(t, c.steps...)
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(c.within, 10*time.Second))
			defer cancel()
			r, err := New(Options{BaseURL: s.URL + "/v1", Stream: true, IdleTimeout: idle}).Complete(ctx, turn1())
			if err != nil {
				t.Fatalf("err = %v, want the answer", err)
			}
			if r.Message.Content != "It is 45.6 °C" || r.FinishReason != llm.FinishStop || r.Usage != c.usage {
				t.Fatalf("answer %q finish %q usage %+v, want \"It is 45.6 °C\" stop %+v", r.Message.Content, r.FinishReason, r.Usage, c.usage)
			}
		})
	}
}

// TestFirstChunkLate: the idle timeout counts from the answer's first
// byte. Before, it counted from the headers, which llama.cpp's server
// sends when it starts evaluating the prompt: a prompt that took a Pi
// longer than idle_timeout (2 min) to read failed with "the server sent
// nothing", where the same call without streaming had its timeout.
func TestFirstChunkLate(t *testing.T) {
	llmtest.FirstChunkLate(t, func(url string, stream bool, idle time.Duration) llm.Provider {
		return New(Options{BaseURL: url + "/v1", Stream: stream, IdleTimeout: idle})
	}, turn1(), `data: {"id":"r","choices":[{"index":0,"delta":{"content":"45.6 °C"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n", "45.6 °C")
}
