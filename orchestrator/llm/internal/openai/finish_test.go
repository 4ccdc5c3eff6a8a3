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
// finish_reason but neither [DONE] nor the end of the body gives its
// answer once the grace passes without an event (the idle timeout here,
// shorter than httpc.FinishGrace), heartbeats or not; a usage chunk that
// comes within the grace is taken; and a server that sends a
// finish_reason with every chunk (some proxies do) loses nothing; a
// deadline or a dropped connection after it keeps the answer too. Before,
// the whole answer was lost to the idle timeout, or to the call's timeout
// while heartbeats came.
func TestStreamEndsAfterFinishReason(t *testing.T) {
	const idle = 300 * time.Millisecond
	text := func(s, finish string) string {
		return `data: {"id":"r","model":"m","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":` + finish + `}]}` + "\n\n"
	}
	end := text("45.6 °C", `"stop"`)
	for _, c := range []struct {
		name    string
		steps   []llmtest.Step
		within  time.Duration // the caller's deadline; 0: 10 s
		content string
		usage   llm.Usage
	}{
		{"silence", []llmtest.Step{{Text: text("It is ", "null") + end}}, 0, "It is 45.6 °C", llm.Usage{}},
		{"heartbeats", append([]llmtest.Step{{Text: text("It is ", "null") + end}}, llmtest.Heartbeats(40, idle/4)...), 0, "It is 45.6 °C", llm.Usage{}},
		{"late usage", []llmtest.Step{{Text: end}, {Wait: idle / 3, Text: `data: {"id":"r","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":3}}` + "\n\n"}}, 0, "45.6 °C", llm.Usage{InputTokens: 82, OutputTokens: 3}},
		{"finish_reason on every chunk", []llmtest.Step{{Text: text("It ", `"stop"`)}, {Wait: idle / 2, Text: text("is ", `"stop"`)}, {Wait: idle / 2, Text: text("45.6", `"stop"`)}, {Wait: idle / 2, Text: text(" °C", `"stop"`)}}, 0, "It is 45.6 °C", llm.Usage{}},
		{"deadline within the grace", []llmtest.Step{{Text: end}}, idle / 2, "45.6 °C", llm.Usage{}},
		{"connection dropped after it", []llmtest.Step{{Text: end, Cut: true}}, 0, "45.6 °C", llm.Usage{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := llmtest.Script(t, c.steps...)
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(c.within, 10*time.Second))
			defer cancel()
			r, err := New(Options{BaseURL: s.URL + "/v1", Stream: true, IdleTimeout: idle}).Complete(ctx, turn1())
			if err != nil {
				t.Fatalf("err = %v, want the answer", err)
			}
			if r.Message.Content != c.content || r.FinishReason != llm.FinishStop || r.Usage != c.usage {
				t.Fatalf("answer %q finish %q usage %+v, want %q stop %+v", r.Message.Content, r.FinishReason, r.Usage, c.content, c.usage)
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
