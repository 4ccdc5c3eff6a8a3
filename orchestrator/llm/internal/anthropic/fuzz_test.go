package anthropic

import (
	"bytes"
	"context"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

func FuzzParseResponse(f *testing.F) {
	llmtest.Seeds(f, "anthropic", false)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseResponse(call, b)
		llmtest.CheckAnswer(t, r, err)
	})
}

func FuzzReadStream(f *testing.F) {
	llmtest.Seeds(f, "anthropic", true)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := readStream(context.Background(), call, bytes.NewReader(b))
		llmtest.CheckAnswer(t, r, err)
	})
}
