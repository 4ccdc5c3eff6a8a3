package orchestrator

import (
	"fmt"
	"strings"
	"testing"
)

// TestToolCallsWrittenAsText runs the real tool loop with a scripted model
// that writes its tool calls as Hermes-style text, as a local model behind
// llama.cpp or Ollama does with some chat templates: the recovered calls
// run, their arguments are validated against the tool's schema like any
// call's (the first call has a number for a path and is refused with
// invalid_params), and the result of the second reaches the final answer.
func TestToolCallsWrittenAsText(t *testing.T) {
	node, _, ctx := startBuiltins(t, "groups = [\"read-only\"]", `{"name": "text-calls", "text_tool_calls": true, "turns": [
	  {"content": "Let me read the note.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": 7}}\n</tool_call>",
	   "expect_tools": ["read"]},
	  {"content": "The path must be a string.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>"},
	  {"content": "The note says: {{last_result}}"}]}`)
	ans, err := node.Chat(ctx, "text", "what does the note say?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ans.Text, "The note says: ") || !strings.Contains(ans.Text, "the pump runs at night") {
		t.Fatalf("answer %q", ans.Text)
	}
	res := queryAudit(t, node,
		`SELECT tool, status, coalesce(error_type, '') FROM tool_calls WHERE conversation_id = 'text' ORDER BY rowid`)
	if got := fmt.Sprint(res.Rows); got != "[[read error invalid_params] [read success ]]" {
		t.Fatalf("audit %s", got)
	}
	hist := queryAudit(t, node, `SELECT count(*) FROM tool_calls WHERE conversation_id = 'text' AND call_id LIKE 'call_text_%'`)
	if fmt.Sprint(hist.Rows) != "[[2]]" {
		t.Fatalf("recovered call ids in the audit: %v", hist.Rows)
	}
}
