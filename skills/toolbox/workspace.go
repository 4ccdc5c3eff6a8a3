package toolbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkWorkspace refuses a workspace that would hand the tools what is
// not theirs. The file tools, bash and every sandboxed skill tool may
// write the workspace, so it must not hold the data directory (the audit
// trail, its key, the API token, the agent's credentials) and must not
// overlap a skill directory (a tool writing a skill.toml there would add
// a tool of its choosing, which may run unconfined). Paths are compared
// after symbolic links, so a link cannot hide either.
func checkWorkspace(cfg Config) error {
	ws := cfg.Builtin.Workspace
	if ws == "" {
		return nil
	}
	w, err := realPath(ws)
	if err != nil {
		return fmt.Errorf("builtin.workspace %s: %w", ws, err)
	}
	if cfg.DataDir != "" {
		d, err := realPath(cfg.DataDir)
		if err != nil {
			return fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
		}
		if within(d, w) {
			return fmt.Errorf("builtin.workspace %s holds the data directory %s: the tools could read its keys and token and rewrite its audit trail; give the workspace a directory of its own", ws, cfg.DataDir)
		}
	}
	for _, dir := range cfg.SkillDirs {
		s, err := realPath(dir)
		if err != nil {
			return fmt.Errorf("skill directory %s: %w", dir, err)
		}
		if within(s, w) || within(w, s) {
			return fmt.Errorf("builtin.workspace %s and the skill directory %s overlap: a tool could write a skill that then runs as a tool; keep them apart", ws, dir)
		}
	}
	return nil
}

// realPath is p made absolute with every symbolic link of its longest
// existing prefix resolved (what does not exist yet cannot be a link).
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether path is dir or below it; both are clean and
// absolute.
func within(path, dir string) bool {
	if path == dir || dir == string(os.PathSeparator) {
		return true
	}
	return strings.HasPrefix(path, dir+string(os.PathSeparator))
}
