package toolbox

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// TestEveryGroup offers every built-in group and checks what each set of
// granted permissions offers: a tool only with all of its permissions,
// todo with none.
func TestEveryGroup(t *testing.T) {
	ws, data := t.TempDir(), t.TempDir()
	b := Builtin{Groups: []string{"all", "git", "web", "memory", "todo"}, Workspace: ws, Sandbox: "none"}
	b.Web.SearchURL = "http://127.0.0.1:1/search"
	for _, tc := range []struct {
		granted []string
		want    string
	}{
		{skills.Permissions(), "apply_patch,bash,edit,find,git_branch,git_commit,git_diff,git_log,git_status,glob,grep,memory_read,memory_write,read,todoread,todowrite,webfetch,websearch,write"},
		{[]string{"fs_read"}, "find,glob,grep,read,todoread,todowrite"},
		{[]string{"network", "git"}, "git_branch,git_commit,git_diff,git_log,git_status,todoread,todowrite,webfetch,websearch"},
		{nil, "todoread,todowrite"},
	} {
		box, err := New(Config{Permissions: tc.granted, Builtin: b, DataDir: data}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(box.Tools.Names(), ","); got != tc.want {
			t.Errorf("granted %v: offered %s, want %s", tc.granted, got, tc.want)
		}
		if err := box.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Memory survives a new box over the same data directory (a restart).
	ctx := context.Background()
	for i, want := range []string{"saved note 1", "#1 "} {
		box, err := New(Config{Permissions: []string{"memory"}, Builtin: b, DataDir: data}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out skills.Output
		if i == 0 {
			out = box.Tools.Call(ctx, "memory_write", map[string]any{"content": "the pump runs at night"})
		} else {
			out = box.Tools.Call(ctx, "memory_read", map[string]any{"query": "pump"})
		}
		if !strings.HasPrefix(out.Text(), want) {
			t.Fatalf("memory call %d = %q %s", i, out.Text(), out.ErrorText())
		}
		box.Close()
	}
	if _, err := New(Config{Builtin: Builtin{Groups: []string{"memory"}}}, nil); err == nil || !strings.Contains(err.Error(), "data_dir") {
		t.Fatalf("memory without a data dir: %v", err)
	}
	bad := Builtin{Groups: []string{"web"}}
	bad.Web.AllowNetworks = []string{"not a prefix"}
	if _, err := New(Config{Builtin: bad}, nil); err == nil || !strings.Contains(err.Error(), "builtin.web.allow_networks") {
		t.Fatalf("bad web config: %v", err)
	}
	if _, err := New(Config{Builtin: Builtin{Groups: []string{"git"}}}, nil); err == nil || !strings.Contains(err.Error(), "builtin.workspace") {
		t.Fatalf("git without a workspace: %v", err)
	}
	box, _ := New(Config{Permissions: []string{"git"}, Builtin: Builtin{Groups: []string{"git"}, Workspace: filepath.Clean(ws)}}, nil)
	defer box.Close()
	if out := box.Tools.Call(ctx, "git_status", nil); out.ErrorType() != wire.ErrNotFound {
		t.Fatalf("git_status without a repository = %+v", out)
	}
}
