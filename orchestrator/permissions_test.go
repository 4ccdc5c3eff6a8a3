package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestOrchestratorDeniesUngrantedTool: the orchestrator's own built-ins
// are gated by [skills] permissions like an edge agent's. Granted only
// file_read, it offers the read tools; a model calling bash anyway is
// told "Permission denied for tool 'bash' (requires: shell)", and the
// call is audited as permission_denied, nothing run.
func TestOrchestratorDeniesUngrantedTool(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "evoclaw.toml")
	body := fmt.Sprintf("data_dir = \"data\"\n[broker]\nlisten = \"127.0.0.1:0\"\n[skills]\npermissions = [\"file_read\"]\n"+
		"[builtin]\ngroups = [\"coding\"]\nworkspace = %q\nsandbox = \"none\"\n", ws)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := scripted.Parse([]byte(`{"name":"deny","turns":[
	  {"content":"","tool_calls":[{"id":"a","name":"bash","arguments":{"command":"touch ran"}}],
	   "expect_tools":["glob","read"]},
	  {"content":"A={{result a}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	node, err := Start(ctx, cfg, Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
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
	res, err := sqlite.QueryReadOnly(ctx, node.AuditPath(), `SELECT tool, status, coalesce(error_type, '') FROM tool_calls WHERE conversation_id = 'deny'`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[bash error permission_denied]]" {
		t.Fatalf("audit %s", got)
	}
}
