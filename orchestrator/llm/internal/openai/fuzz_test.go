package openai

import (
	"bytes"
	"context"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// uniqueIDs fails t when two calls share an id: this parser makes up ids
// for calls that come without one or with a duplicate.
func uniqueIDs(t *testing.T, r llm.Response) {
	t.Helper()
	ids := map[string]bool{}
	for _, c := range r.Message.ToolCalls {
		if ids[c.ID] {
			t.Fatalf("two calls with id %q", c.ID)
		}
		ids[c.ID] = true
	}
}

func FuzzParseResponse(f *testing.F) {
	llmtest.Seeds(f, "openai", false)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseResponse(call, b)
		llmtest.CheckAnswer(t, r, err)
		uniqueIDs(t, r)
	})
}

func FuzzReadStream(f *testing.F) {
	llmtest.Seeds(f, "openai", true)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := readStream(context.Background(), call, bytes.NewReader(b))
		llmtest.CheckAnswer(t, r, err)
		uniqueIDs(t, r)
	})
}
