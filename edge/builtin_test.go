package edge

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// TestAgentBuiltinTools enables built-in groups on an edge agent: they are
// listed in tools_list with their schemas, run for tool commands inside
// the workspace, refuse paths outside it with permission_denied, and are
// audited like skill tools.
func TestAgentBuiltinTools(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("kitchen sensor moved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var dataDir string
	p := startAgent(t, func(c *Config) {
		c.Builtin = toolbox.Builtin{Groups: []string{"read-only"}, Workspace: ws}
		c.Skills.Permissions = []string{"file_read"}
		dataDir = c.DataDir
	})

	p.Send(`{"command":"tools_list","request_id":"l1"}`)
	l, err := wire.DecodeToolsList(p.Await("l1"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]wire.ToolInfo{}
	for _, ti := range l.Tools {
		byName[ti.Name] = ti
	}
	for _, name := range []string{"read", "grep", "find", "echo_args"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("tools_list lacks %s: %v", name, l.Tools)
		}
	}
	if _, ok := byName["bash"]; ok {
		t.Error("read-only group offers bash")
	}
	if req, _ := byName["read"].Parameters["required"].([]any); len(req) != 1 || req[0] != "path" {
		t.Errorf("read schema = %v", byName["read"].Parameters)
	}

	p.Send(`{"command":"tool","payload":{"tool":"read","parameters":{"path":"notes.txt"}},"request_id":"b1"}`)
	res, err := wire.DecodeToolResult(p.Await("b1"))
	if err != nil || res.Status != wire.StatusSuccess || res.Result != "kitchen sensor moved\n" {
		t.Fatalf("read = %+v, %v", res, err)
	}
	p.Send(`{"command":"tool","payload":{"tool":"read","parameters":{"path":"../../etc/passwd"}},"request_id":"b2"}`)
	res, err = wire.DecodeToolResult(p.Await("b2"))
	if err != nil || res.ErrorType != wire.ErrPermissionDenied || strings.Contains(res.Result, "root:") {
		t.Fatalf("read outside = %+v, %v", res, err)
	}
	p.Send(`{"command":"tool","payload":{"tool":"bash","parameters":{"command":"id"}},"request_id":"b3"}`)
	if res, _ := wire.DecodeToolResult(p.Await("b3")); res.ErrorType != wire.ErrNotFound {
		t.Fatalf("bash on a read-only agent = %+v", res)
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "audit.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var typ string
	testenv.Eventually(t, 10*time.Second, func() bool {
		return db.QueryRow(`SELECT coalesce(error_type, '') FROM tool_calls WHERE request_id = 'b2'`).Scan(&typ) == nil
	}, "audit row of b2")
	if typ != string(wire.ErrPermissionDenied) {
		t.Fatalf("audited error_type %q", typ)
	}
}

func TestBuiltinConfig(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"agent_id = \"a\"\n[builtin]\ngroups = [\"coding\"]\nworkspace = \"ws\"\nsandbox = \"bubblewrap\"\n", ""},
		{"agent_id = \"a\"\n[builtin]\ngroups = [\"everything\"]\nworkspace = \"ws\"\n", "unknown group"},
		{"agent_id = \"a\"\n[builtin]\ngroups = [\"all\"]\n", "builtin.workspace"},
		{"agent_id = \"a\"\n[builtin]\ngroups = [\"all\"]\nworkspace = \"ws\"\nsandbox = \"docker\"\n", "builtin.sandbox"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			dir := t.TempDir()
			c, ok := loadConfig(t, dir, tc.body, tc.want)
			if ok && c.Builtin.Workspace != filepath.Join(dir, "ws") {
				t.Errorf("%q: %+v", tc.body, c.Builtin)
			}
		})
	}
	// The workspace must exist when the agent starts.
	cfg := Config{AgentID: "a", DataDir: t.TempDir(), Builtin: toolbox.Builtin{Groups: []string{"all"}, Workspace: filepath.Join(t.TempDir(), "missing")}}
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("New with a missing workspace: %v", err)
	}
}
