// Package gittools provides the git tools of the design, git_status,
// git_diff, git_log, git_branch and git_commit, over the repository at the
// root of a workspace.
//
// They use go-git, a pure-Go implementation, not the git binary: a device
// without git installed still has them, and no command runs. That second
// point is a security boundary: git runs programs named in the
// repository's own .git/config (core.fsmonitor, diff and filter drivers,
// hooks), so with the binary an agent allowed to write files and use git
// could run any command without the shell permission. go-git runs none.
// The repository is opened through a file system over an os.Root of the
// workspace (rootFS): the kernel resolves every path go-git reads or
// writes, in the work tree and in .git alike, component by component from
// the workspace's directory descriptor, and follows a symlink only while
// it stays inside. A link leading out fails instead, and so does one
// swapped in mid-call (by a bash command racing the tool): there is no
// path check to race. A symlink in the work tree is content to git (its
// target is what status, diff and commit see), never followed.
//
// go-git reads every object it needs whole, at the size the object
// declares; with Options.Child each call runs in a child process whose
// memory is bounded (child.go), so that a crafted object cannot take the
// agent's.
//
// # Concurrency
//
// The tools are safe for concurrent use; each call opens the repository
// afresh.
package gittools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Defaults of Options.
const (
	// DefaultMaxLines caps the lines of git_status, git_log and git_branch.
	DefaultMaxLines = 200
	// DefaultMaxDiffBytes caps what git_diff returns.
	DefaultMaxDiffBytes = 256 << 10
	// DefaultAuthorName and DefaultAuthorEmail sign commits when neither
	// Options nor the repository's config name an author.
	DefaultAuthorName  = "evoclaw agent"
	DefaultAuthorEmail = "agent@evoclaw.invalid"
)

// Options configure the git tools. Dir is required; the zero value of
// every other field means its default.
type Options struct {
	// Dir is the workspace: an absolute directory holding the repository
	// (Dir/.git). The tools never leave it.
	Dir string
	// MaxLines caps the lines of status, log and branch (default 200).
	MaxLines int
	// MaxDiffBytes caps the diff returned (default 256 KiB).
	MaxDiffBytes int
	// AuthorName and AuthorEmail sign commits; empty: the repository's
	// user.name and user.email, else the Default* values.
	AuthorName, AuthorEmail string
	// Child, when set, runs each call in a child process under a memory
	// bound (see Runner); nil runs it in this process, unbounded.
	Child *Runner `json:"-"`
}

func (o Options) withDefaults() (Options, error) {
	if !filepath.IsAbs(o.Dir) {
		return o, fmt.Errorf("git tools: workspace directory must be absolute, got %q", o.Dir)
	}
	o.Dir = filepath.Clean(o.Dir)
	defaults.Positive(&o.MaxLines, DefaultMaxLines)
	defaults.Positive(&o.MaxDiffBytes, DefaultMaxDiffBytes)
	return o, nil
}

// Tools returns git_status, git_diff, git_log, git_branch and git_commit,
// each requiring the git permission. Each answers by its deadline even
// when go-git would not (see maxRunning); with o.Child, each call runs in
// a child process.
func Tools(o Options) ([]skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	tools := o.tools()
	sem := make(chan struct{}, maxRunning)
	for i := range tools {
		name, run := tools[i].Tool.Name, tools[i].Run
		if o.Child != nil {
			run = func(ctx context.Context, args map[string]any) skills.Output { return o.Child.run(ctx, o, name, args) }
		}
		tools[i].Run = deadlined(sem, name, run)
	}
	return tools, nil
}

// tools are the git tools, run in this process.
func (o Options) tools() []skills.GoTool {
	return []skills.GoTool{o.status(), o.diff(), o.log(), o.branch(), o.commit()}
}

// errNoRepo means the workspace holds no repository.
var errNoRepo = errors.New("the workspace is not a git repository (no .git directory at its root)")

// open opens the repository at the workspace root through an os.Root of
// the workspace (see rootFS); done closes that root once the call is over
// (files still open outlive it).
func (o Options) open() (repo *git.Repository, done func(), err error) {
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("open workspace: %w", err)
	}
	defer func() {
		if err != nil {
			root.Close()
		}
	}()
	fi, err := root.Lstat(git.GitDirName)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil, errNoRepo
	case err != nil:
		return nil, nil, err
	case !fi.IsDir():
		// A .git file points elsewhere (worktrees, submodules): that could
		// be outside the workspace. A .git symlink is refused alike.
		return nil, nil, fmt.Errorf("%s is not a directory; linked worktrees and submodules are not supported", git.GitDirName)
	}
	wt := newRootFS(root, o.Dir)
	dot, err := wt.Chroot(git.GitDirName)
	if err != nil {
		return nil, nil, err
	}
	st := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRUDefault(), filesystem.Options{})
	if repo, err = git.Open(st, wt); err != nil {
		return nil, nil, err
	}
	return repo, func() { root.Close() }, nil
}

// failure maps an error of go-git to an output.
func failure(tool string, err error) skills.Output {
	code := wire.ErrExecutionFailed
	switch {
	case errors.Is(err, errNoRepo), errors.Is(err, git.ErrRepositoryNotExists):
		code = wire.ErrNotFound
	case errors.Is(err, os.ErrPermission):
		code = wire.ErrPermissionDenied
	}
	return skills.Failed(code, fmt.Sprintf("%s: %v", tool, err))
}

// text returns a successful output of lines, capped at max with a note.
func text(lines []string, max int, none, more string) skills.Output {
	if len(lines) == 0 {
		return skills.Output{Content: []skills.Block{skills.TextBlock(none)}}
	}
	cut := len(lines) > max
	if cut {
		lines = append(lines[:max:max], fmt.Sprintf("[%d more %s not shown]", len(lines)-max, more))
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(strings.Join(lines, "\n"))}, Truncated: cut}
}

// params builds a Parameters value: props alternate name, type,
// description.
func params(required []string, props ...string) skills.Parameters {
	p := skills.Parameters{Properties: map[string]skills.Param{}, Required: required}
	for i := 0; i+2 < len(props)+1; i += 3 {
		p.Properties[props[i]] = skills.Param{Type: props[i+1], Description: props[i+2]}
	}
	return p
}

func str(args map[string]any, key string) string {
	s, _ := args[key].(string)
	return s
}

func integer(args map[string]any, key string, def int) int {
	if f, ok := args[key].(float64); ok {
		return int(f)
	}
	if n, ok := args[key].(int64); ok {
		return int(n)
	}
	if n, ok := args[key].(int); ok {
		return n
	}
	return def
}

// relPath checks a path argument: relative to the workspace, inside it,
// slash-separated and clean ("" for none).
func relPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	c := filepath.ToSlash(filepath.Clean(p))
	if filepath.IsAbs(p) || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q must be relative and inside the workspace", p)
	}
	if c == "." {
		return "", nil
	}
	return c, nil
}
