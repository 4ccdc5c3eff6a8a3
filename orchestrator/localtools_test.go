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

// TestOrchestratorOwnTools configures the read-only built-in group in
// evoclaw.toml: the model reads a file of the workspace, is refused a path
// outside it, and both calls are audited on the orchestrator.
func TestOrchestratorOwnTools(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the pump runs at night\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "evoclaw.toml")
	body := fmt.Sprintf("data_dir = \"data\"\n[broker]\nlisten = \"127.0.0.1:0\"\n[skills]\npermissions = [\"file_read\"]\n[builtin]\ngroups = [\"read-only\"]\nworkspace = %q\n", ws)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := scripted.Parse([]byte(`{"name":"own","turns":[
	  {"content":"","tool_calls":[{"id":"a","name":"read","arguments":{"path":"notes.txt"}},
	                              {"id":"b","name":"read","arguments":{"path":"../../../etc/passwd"}}],
	   "expect_tools":["read","grep","find"]},
	  {"content":"A={{result a}} B={{result b}}"}]}`))
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
	ans, err := node.Chat(ctx, "own", "what does the note say?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Text, "the pump runs at night") || !strings.Contains(ans.Text, "B=Error (permission_denied)") {
		t.Fatalf("answer %q", ans.Text)
	}
	res, err := sqlite.QueryReadOnly(ctx, node.AuditPath(), `SELECT tool, status, coalesce(error_type, ''), side FROM tool_calls WHERE conversation_id = 'own' ORDER BY call_id`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[read success  orchestrator] [read error permission_denied orchestrator]]" {
		t.Fatalf("audit %s", got)
	}
}
