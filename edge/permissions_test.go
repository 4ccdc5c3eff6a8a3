package edge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestGrantedOnlyFileReadGetsNoShell is the regression test of an agent
// granted only fs_read that was offered bash, and ran it, because only
// [builtin] groups gated built-ins: from a real agent.toml through
// skills/toolbox, it offers the read tools and denies the others with the
// design's wording, running nothing.
func TestGrantedOnlyFileReadGetsNoShell(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	body := fmt.Sprintf("agent_id = \"pi-ro\"\n[skills]\npermissions = [\"fs_read\"]\n[builtin]\ngroups = [\"all\"]\nworkspace = %q\nsandbox = \"none\"\n", ws)
	cfg, _ := loadConfig(t, dir, body, "")
	box, err := NewToolbox(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if got, want := box.Tools.Names(), []string{"find", "glob", "grep", "read"}; !slices.Equal(got, want) {
		t.Fatalf("offered %v, want %v", got, want)
	}
	marker := filepath.Join(ws, "ran")
	for _, tc := range []struct{ tool, args, want string }{
		{"bash", fmt.Sprintf(`{"command":"touch %s"}`, marker), "Permission denied for tool 'bash' (requires: shell)."},
		{"write", `{"path":"ran","content":"x"}`, "Permission denied for tool 'write' (requires: file_write)."},
		{"apply_patch", `{"patch":"--- /dev/null\n+++ b/ran\n@@ -0,0 +1 @@\n+x\n"}`, "Permission denied for tool 'apply_patch' (requires: file_write)."},
	} {
		out := box.Tools.CallJSON(context.Background(), tc.tool, []byte(tc.args))
		if out.ErrorType() != wire.ErrPermissionDenied || len(out.ErrorText()) < len(tc.want) || out.ErrorText()[:len(tc.want)] != tc.want {
			t.Errorf("%s = %q (%s), want %q", tc.tool, out.ErrorText(), out.ErrorType(), tc.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a denied tool ran")
	}
	for _, l := range box.Tools.List() {
		if l.Def.Name == "bash" && (l.Offered || !slices.Equal(l.Missing, []string{"shell"})) {
			t.Fatalf("bash listing %+v", l)
		}
	}
}

// TestAgentDeniesUngrantedTool: over MQTT, a tool command for a built-in
// the agent knows but may not run answers permission_denied, not
// not_found, and is audited as such.
func TestAgentDeniesUngrantedTool(t *testing.T) {
	ws := t.TempDir()
	p := startAgent(t, func(c *Config) {
		c.Skills.Permissions = []string{"fs_read"}
		c.Builtin.Groups, c.Builtin.Workspace, c.Builtin.Sandbox = []string{"coding"}, ws, "none"
	})
	p.Send(`{"command":"tool","payload":{"tool":"bash","parameters":{"command":"touch ran"}},"request_id":"d1"}`)
	res, err := wire.DecodeToolResult(p.Await("d1"))
	if err != nil || res.ErrorType != wire.ErrPermissionDenied || res.Error[:len("Permission denied for tool 'bash' (requires: shell)")] != "Permission denied for tool 'bash' (requires: shell)" {
		t.Fatalf("bash = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("bash ran")
	}
}
