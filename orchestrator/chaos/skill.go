package chaos

import (
	"embed"
	"fmt"
	"io/fs"

	"github.com/evoclaw/evoclaw/skills/shipped"
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
	sub, err := fs.Sub(skillFS, "skill")
	if err != nil {
		return "", fmt.Errorf("install chaos skill: %w", err)
	}
	if err := shipped.WriteTree(sub, dir); err != nil {
		return "", fmt.Errorf("install chaos skill: %w", err)
	}
	return dir, nil
}
