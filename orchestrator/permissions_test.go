package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestBashTimeoutArgumentHolds: on a real node whose exec category
// defaults to 1 s, a bash call asking for timeout_ms 5000 runs its 2 s
// command to the end, and one asking for nothing is cut at the default.
// Before, the loop cut every call at the category's default whatever
// timeout_ms said.
func TestBashTimeoutArgumentHolds(t *testing.T) {
	node := startShellNode(t, "[loop.timeouts.exec]\ndefault = \"1s\"\nmax = \"10s\"\n", `{"name":"long","turns":[
	  {"content":"","tool_calls":[
	    {"id":"a","name":"bash","arguments":{"command":"sleep 2; echo slept","timeout_ms":5000}},
	    {"id":"b","name":"bash","arguments":{"command":"sleep 3; echo never"}}]},
	  {"content":"A={{result a}} B={{result b}}"}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ans, err := node.Chat(ctx, "long", "run both")
	if err != nil {
		t.Fatal(err)
	}
	a, b, _ := strings.Cut(ans.Text, " B=")
	if !strings.Contains(a, "slept") || strings.Contains(b, "never") || !strings.Contains(b, "timeout") {
		t.Fatalf("answer %q: want A to have run to the end and B cut at the default", ans.Text)
	}
	res := queryAudit(t, node, `SELECT call_id, status, coalesce(error_type, '') FROM tool_calls WHERE conversation_id = 'long' ORDER BY call_id`)
	if got := fmt.Sprint(res.Rows); got != "[[a success ] [b error timeout]]" {
		t.Fatalf("audit %s", got)
	}
}

// TestRunsOfThisStartAreNotCut: a node's own tool run that is still going
// when the node's work on its journal begins (journalDelay after start)
// is this start's, not one a crash cut: it runs to its end and has one
// row, its own. Before the run ids told starts apart, that work killed it
// as a leftover and audited it as interrupted.
func TestRunsOfThisStartAreNotCut(t *testing.T) {
	sleep := journalDelay + 500*time.Millisecond
	node := startShellNode(t, "", fmt.Sprintf(`{"name":"long","turns":[
	  {"content":"","tool_calls":[{"id":"a","name":"bash","arguments":{"command":"sleep %.1f; echo slept"}}]},
	  {"content":"A={{result a}}"}]}`, sleep.Seconds()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ans, err := node.Chat(ctx, "long", "run it")
	if err != nil {
		t.Fatal(err)
	}
	if ans.Text != "A=slept" {
		t.Fatalf("answer %q, want the run to end on its own", ans.Text)
	}
	res := queryAudit(t, node, `SELECT tool, status, coalesce(error_type, '') FROM tool_calls WHERE tool = 'bash'`)
	if got := fmt.Sprint(res.Rows); got != "[[bash success ]]" {
		t.Fatalf("audit %s", got)
	}
}

// startShellNode starts a node whose bash (no sandbox, a workspace of its
// own) is granted, with the scripted model playing transcript; extra is
// appended to its config.
func startShellNode(t *testing.T, extra, transcript string) *Node {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := loadConfig(t, dir, fmt.Sprintf("data_dir = \"data\"\n[broker]\nlisten = \"127.0.0.1:0\"\n[skills]\npermissions = [\"shell\"]\n"+
		"[builtin]\nworkspace = %q\ngroups = [\"coding\"]\nsandbox = \"none\"\n%s", ws, extra), "")
	return startNode(t, cfg, Options{Provider: mustScript(t, transcript)})
}
