package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOrchestratorDeniesUngrantedTool: the orchestrator's own built-ins
// are gated by [skills] permissions like an edge agent's. Granted only
// file_read, it offers the read tools; a model calling bash anyway is
// told "Permission denied for tool 'bash' (requires: shell)", and the
// call is audited as permission_denied, nothing run.
func TestOrchestratorDeniesUngrantedTool(t *testing.T) {
	node, ws, ctx := startBuiltins(t, "groups = [\"coding\"]\nsandbox = \"none\"", `{"name":"deny","turns":[
	  {"content":"","tool_calls":[{"id":"a","name":"bash","arguments":{"command":"touch ran"}}],
	   "expect_tools":["glob","read"]},
	  {"content":"A={{result a}}"}]}`)
	ans, err := node.Chat(ctx, "deny", "run something")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Text, "Permission denied for tool 'bash' (requires: shell)") {
		t.Fatalf("answer %q", ans.Text)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("bash ran")
	}
	res := queryAudit(t, node, `SELECT tool, status, coalesce(error_type, '') FROM tool_calls WHERE conversation_id = 'deny'`)
	if got := fmt.Sprint(res.Rows); got != "[[bash error permission_denied]]" {
		t.Fatalf("audit %s", got)
	}
}
