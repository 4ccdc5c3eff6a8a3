package toolbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/internal/gittools"
	"github.com/evoclaw/evoclaw/skills/internal/memory"
	"github.com/evoclaw/evoclaw/skills/internal/todo"
	"github.com/evoclaw/evoclaw/skills/internal/webtools"
)

// addGroups adds the tools of the configured built-in groups, except
// remote (Connect adds those).
func (b *Box) addGroups() error {
	cfg := b.cfg
	bi := cfg.Builtin
	if slices.ContainsFunc(bi.Groups, needsWorkspace) {
		if fi, err := os.Stat(bi.Workspace); err != nil || !fi.IsDir() {
			return fmt.Errorf("builtin.workspace %s is not a directory: %v", bi.Workspace, err)
		}
	}
	if slices.Contains(bi.Groups, GroupMemory) || slices.Contains(bi.Groups, GroupTodo) {
		if cfg.DataDir == "" {
			return fmt.Errorf("builtin.groups: the memory and todo groups need the node's data_dir")
		}
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return fmt.Errorf("data_dir: %w", err)
		}
	}
	var files *builtin.Options // made once: confine tries the sandbox
	for i, g := range bi.Groups {
		if slices.Contains(bi.Groups[:i], g) {
			continue
		}
		var tools []skills.GoTool
		var err error
		switch g {
		case builtin.GroupRemote:
			continue
		case GroupGit:
			var child *gittools.Runner
			if child, err = gitChild(); err == nil {
				tools, err = gittools.Tools(gittools.Options{Dir: bi.Workspace, Child: child})
			}
		case GroupWeb:
			tools, err = webtools.Tools(bi.Web)
		case GroupTodo:
			var s *todo.Store
			if s, err = todo.Open(filepath.Join(cfg.DataDir, "todos"), 0); err == nil {
				tools = todo.Tools(s)
			}
		case GroupMemory:
			var s *memory.Store
			if s, err = memory.Open(filepath.Join(cfg.DataDir, "memory.db"), 0); err == nil {
				b.mu.Lock()
				b.memory = s
				b.mu.Unlock()
				tools = memory.Tools(s)
			}
		default:
			if files == nil {
				files = &builtin.Options{Dir: bi.Workspace, Sandbox: confine(bi, cfg.LookPath, b.log), Network: bi.Network,
					BashTimeout: cfg.DefaultTimeout, MaxBashTimeout: cfg.MaxTimeout}
			}
			tools, err = builtin.Group(g, *files)
		}
		if err != nil {
			return fmt.Errorf("built-in group %s: %w", g, err)
		}
		if err := b.Tools.Add(tools...); err != nil {
			return err
		}
	}
	return nil
}
