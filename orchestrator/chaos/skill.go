package chaos

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// skillFS holds the scenarios' tool: mark appends its tag to a run log, so
// every execution leaves one line and a repeated run shows as a repeated
// tag.
//
//go:embed skill
var skillFS embed.FS

// markTool is the tool every scenario calls.
const markTool = "mark"

// installSkill writes the chaos skill to dir/chaos and returns dir.
func installSkill(dir string) (string, error) {
	err := fs.WalkDir(skillFS, "skill", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel("skill", path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := skillFS.ReadFile(path)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Base(filepath.Dir(path)) == "bin" {
			mode = 0o755
		}
		return os.WriteFile(dst, b, mode)
	})
	if err != nil {
		return "", fmt.Errorf("install chaos skill: %w", err)
	}
	return dir, nil
}
