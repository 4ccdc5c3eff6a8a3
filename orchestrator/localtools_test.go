package orchestrator

import (
	"fmt"
	"strings"
	"testing"
)

// TestOrchestratorOwnTools configures the read-only built-in group in
// evoclaw.toml: the model reads a file of the workspace, is refused a path
// outside it, and both calls are audited on the orchestrator.
func TestOrchestratorOwnTools(t *testing.T) {
	node, _, ctx := startBuiltins(t, "groups = [\"read-only\"]", `{"name":"own","turns":[
	  {"content":"","tool_calls":[{"id":"a","name":"read","arguments":{"path":"notes.txt"}},
	                              {"id":"b","name":"read","arguments":{"path":"../../../etc/passwd"}}],
	   "expect_tools":["read","grep","find"]},
	  {"content":"A={{result a}} B={{result b}}"}]}`)
	ans, err := node.Chat(ctx, "own", "what does the note say?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Text, "the pump runs at night") || !strings.Contains(ans.Text, "B=Error (permission_denied)") {
		t.Fatalf("answer %q", ans.Text)
	}
	res := queryAudit(t, node, `SELECT tool, status, coalesce(error_type, ''), side FROM tool_calls WHERE conversation_id = 'own' ORDER BY call_id`)
	if got := fmt.Sprint(res.Rows); got != "[[read success  orchestrator] [read error permission_denied orchestrator]]" {
		t.Fatalf("audit %s", got)
	}
}
