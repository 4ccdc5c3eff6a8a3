package scripted

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// benchRequest is a request like those of `evoclaw bench`: a short chat,
// a tool call and its result, and the tools of an agent.
func benchRequest(tools int) llm.Request {
	req := llm.Request{Model: "m", System: "You are a helpful assistant on a small board.", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "run the noop tool"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "bench-edge__noop", Arguments: json.RawMessage(`{"x":1}`)}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Name: "bench-edge__noop", Content: "ok"},
	}}
	for i := range tools {
		req.Tools = append(req.Tools, llm.ToolDef{Name: fmt.Sprintf("bench-edge__tool_%d", i), Description: "Reads a file of the workspace and returns its text",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"path":  map[string]any{"type": "string", "description": "file to read"},
				"lines": map[string]any{"type": "integer", "description": "how many lines"},
			}, "required": []any{"path"}}})
	}
	return req
}

// The estimate stays within a quarter of the request's JSON size, which is
// what it stands for (4 bytes a token).
func TestApproxTokensFollowsTheEncodedSize(t *testing.T) {
	for _, tools := range []int{0, 1, 20} {
		t.Run(fmt.Sprint(tools, " tools"), func(t *testing.T) {
			req := benchRequest(tools)
			b, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			want := len(b)/4 + 1
			if got := approxTokens(req); got < want*3/4 || got > want*5/4 {
				t.Fatalf("estimate %d tokens, the encoding %d", got, want)
			} else {
				t.Logf("estimate %d tokens, the encoding %d", got, want)
			}
		})
	}
}

func BenchmarkApproxTokens(b *testing.B) {
	req := benchRequest(20)
	b.ReportAllocs()
	for range b.N {
		if approxTokens(req) <= 0 {
			b.Fatal("no tokens")
		}
	}
}
