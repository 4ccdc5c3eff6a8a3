package toolbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceKeepsOutOfTheDataAndSkillDirectories: a workspace that
// holds the data directory, or overlaps a skill directory, directly or
// through a symbolic link, is refused with an error naming both; apart,
// side by side or with the workspace inside the data directory, it is
// accepted.
func TestWorkspaceKeepsOutOfTheDataAndSkillDirectories(t *testing.T) {
	root := t.TempDir()
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ws, data, sk := mk("ws"), mk("data"), mk("skills")
	inner := mk("ws", "inner")
	link := filepath.Join(root, "wslink")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		workspace string
		data      string
		skills    []string
		want      string // "" accepted
	}{
		{"apart", ws, data, []string{sk}, ""},
		{"no workspace", "", filepath.Join(ws, "data"), []string{ws}, ""},
		{"workspace inside the data directory", mk("data", "work"), data, []string{sk}, ""},
		{"data directory inside the workspace", ws, filepath.Join(ws, "evoclaw-data"), nil, "holds the data directory"},
		{"data directory is the workspace", ws, ws, nil, "holds the data directory"},
		{"data directory below, relative", ws + "/inner/..", inner, nil, "holds the data directory"},
		{"data directory through a link", ws, filepath.Join(link, "data"), nil, "holds the data directory"},
		{"workspace through a link", link, filepath.Join(ws, "data"), nil, "holds the data directory"},
		{"workspace is root", "/", data, nil, "holds the data directory"},
		{"skill directory inside the workspace", ws, data, []string{sk, filepath.Join(ws, "skills")}, "overlap"},
		{"workspace inside a skill directory", mk("skills", "x"), data, []string{sk}, "overlap"},
		{"skill directory is the workspace", ws, data, []string{link}, "overlap"},
		{"sibling with a common prefix", ws, ws + "-data", []string{ws + "-skills"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkWorkspace(Config{DataDir: tc.data, SkillDirs: tc.skills, Builtin: Builtin{Workspace: tc.workspace}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// New refuses it too, before any tool exists.
	if _, err := New(Config{DataDir: filepath.Join(ws, "d"), Builtin: Builtin{Groups: []string{"read-only"}, Workspace: ws}}, nil); err == nil || !strings.Contains(err.Error(), "holds the data directory") {
		t.Fatalf("New = %v", err)
	}
}
