package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
)

// writeTree creates files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGlob(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{
		"main.go": "", "README.md": "", "docs/a.md": "", "docs/deep/b.md": "", "src/x/y.go": "", "src/x/y_test.go": "", "notes.txt": "",
	})
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.md": ""})
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	tool, err := builtin.NewGlob(builtin.Options{Dir: ws, MaxResults: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := tool.Tool.Permissions; len(got) != 1 || got[0] != skills.PermFileRead {
		t.Fatalf("glob permissions %v", got)
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{Granted: []string{skills.PermFileRead}})
	if err := ts.Add(tool); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     map[string]any
		want     string
		wantCode wire.ErrorType
	}{
		{map[string]any{"pattern": "**/*.md"}, "README.md\ndocs/a.md\ndocs/deep/b.md", ""},
		{map[string]any{"pattern": "**/*.{go,txt}"}, "main.go\nnotes.txt\nsrc/x/y.go\nsrc/x/y_test.go", ""},
		{map[string]any{"pattern": "*.go", "path": "src/x"}, "src/x/y.go\nsrc/x/y_test.go", ""},
		{map[string]any{"pattern": "*", "path": "docs"}, "docs/a.md\ndocs/deep/", ""},
		{map[string]any{"pattern": "*", "path": "docs", "files_only": true}, "docs/a.md", ""},
		{map[string]any{"pattern": "**/*.none"}, "no matches", ""},
		{map[string]any{"pattern": "**"}, "[stopped at 5 paths", ""},
		{map[string]any{"pattern": "../*"}, "", wire.ErrPermissionDenied},
		{map[string]any{"pattern": "/etc/*"}, "", wire.ErrInvalidParams},
		{map[string]any{"pattern": "[a"}, "", wire.ErrInvalidParams},
		{map[string]any{"pattern": "*", "path": "../"}, "", wire.ErrPermissionDenied},
		{map[string]any{"pattern": "*", "path": "link"}, "", wire.ErrPermissionDenied},
	} {
		out := ts.Call(context.Background(), "glob", tc.args)
		if out.ErrorType() != tc.wantCode || !strings.Contains(out.Text(), tc.want) {
			t.Errorf("glob %v = %q %q (%s), want %q %q", tc.args, out.Text(), out.ErrorText(), out.ErrorType(), tc.want, tc.wantCode)
		}
		if strings.Contains(out.Text(), "secret") {
			t.Errorf("glob %v left the workspace: %q", tc.args, out.Text())
		}
	}
	// ** does not descend into the symlink leading out.
	if out := ts.Call(context.Background(), "glob", map[string]any{"pattern": "**/secret.md"}); out.Text() != "no matches" {
		t.Errorf("glob through a symlink = %q %q", out.Text(), out.ErrorText())
	}
}
