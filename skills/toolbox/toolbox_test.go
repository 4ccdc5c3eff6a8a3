package toolbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/skills"
)

func TestNew(t *testing.T) {
	skillsDir, ws := t.TempDir(), t.TempDir()
	// A skill tool called "read" is replaced by the built-in of that name.
	dir := filepath.Join(skillsDir, "clash")
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, skills.FileName), []byte("[skill]\nname = \"clash\"\n[[tools]]\nname = \"read\"\nbinary = \"bin/read\"\n[[tools]]\nname = \"probe\"\nbinary = \"bin/read\"\npermissions = [\"net\"]\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("from the workspace"), 0o644)
	box, err := New(Config{SkillDirs: []string{skillsDir}, Permissions: []string{"file_read", "file_write", "shell"}, Builtin: Builtin{Groups: []string{"read-only", "coding"}, Workspace: ws}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	box.ConnectMCP(context.Background()) // none configured: nothing to do
	if got := strings.Join(box.Tools.Names(), ","); got != "apply_patch,bash,edit,find,glob,grep,read,write" {
		t.Fatalf("offered %s", got)
	}
	if out := box.Tools.Call(context.Background(), "read", map[string]any{"path": "a.txt"}); out.Text() != "from the workspace" {
		t.Fatalf("read = %+v", out)
	}
	for _, tc := range []struct {
		b    Builtin
		want string
	}{
		{Builtin{Groups: []string{"everything"}, Workspace: ws}, "unknown group"},
		{Builtin{Groups: []string{"all"}}, "builtin.workspace: an absolute directory"},
		{Builtin{Groups: []string{"all"}, Workspace: filepath.Join(ws, "missing")}, "not a directory"},
		{Builtin{Sandbox: "chroot"}, "builtin.sandbox"},
	} {
		if _, err := New(Config{Builtin: tc.b}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.b, err, tc.want)
		}
	}
}

// Resolve makes relative paths relative to the file's directory and leaves
// absolute, empty and remote-side paths alone.
func TestBuiltinResolve(t *testing.T) {
	b := Builtin{Workspace: "ws", Remote: &Remote{KeyFile: "keys/id", KnownHosts: "/etc/ssh/known_hosts", Dir: "/srv/ws"}}
	b.Resolve("/conf")
	if b.Workspace != "/conf/ws" || b.Remote.KeyFile != "/conf/keys/id" || b.Remote.KnownHosts != "/etc/ssh/known_hosts" || b.Remote.Dir != "/srv/ws" {
		t.Fatalf("resolved workspace %q, remote %+v", b.Workspace, *b.Remote)
	}
	var local Builtin
	local.Resolve("/conf")
	if local.Workspace != "" || local.Remote != nil {
		t.Fatalf("an empty [builtin] resolved to %+v", local)
	}
}
