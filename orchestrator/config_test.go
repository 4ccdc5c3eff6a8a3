package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A relative --config: relative paths in the file are relative to the
// file, not to the working directory.
func TestLoadConfigRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	if err := os.MkdirAll(filepath.Join(conf, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "data_dir = \"data\"\n[skills]\ndirs = [\"skills\"]\n[builtin]\ngroups = [\"read-only\"]\nworkspace = \"ws\"\n"
	if err := os.WriteFile(filepath.Join(conf, "evoclaw.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	c, err := LoadConfig(filepath.Join("conf", "evoclaw.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]string{"data_dir": c.DataDir, "workspace": c.Builtin.Workspace, "skills": c.Skills.Dirs[0]} {
		if !filepath.IsAbs(got) || !strings.HasPrefix(got, conf) {
			t.Errorf("%s = %q, want a path under %s", what, got, conf)
		}
	}
}
