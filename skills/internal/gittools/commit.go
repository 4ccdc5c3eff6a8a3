package gittools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// maxMessageBytes bounds a commit message.
const maxMessageBytes = 64 << 10

func (o Options) commit() skills.GoTool {
	t := skills.Tool{
		Name: "git_commit",
		Description: "Commit in the workspace repository: stage the given paths (or, with all=true, every change including new " +
			"and deleted files), then commit what is staged with the message. Fails when there is nothing to commit.",
		Parameters: params([]string{"message"},
			"message", skills.TypeString, "The commit message: a subject line, optionally a blank line and a body",
			"paths", skills.TypeArray, "Files to stage before committing, relative to the workspace",
			"all", skills.TypeBoolean, "Stage every change before committing (default false)"),
		Permissions: []string{skills.PermGit},
	}
	return skills.GoTool{Tool: t, Run: o.runCommit}
}

func (o Options) runCommit(ctx context.Context, args map[string]any) skills.Output {
	msg := str(args, "message")
	if msg == "" || len(msg) > maxMessageBytes {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("git_commit: message must be 1 to %d bytes", maxMessageBytes))
	}
	var paths []string
	if raw, ok := args["paths"].([]any); ok {
		for _, v := range raw {
			s, ok := v.(string)
			p, err := relPath(s)
			if !ok || err != nil || p == "" {
				return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("git_commit: paths: %v is not a relative path inside the workspace", v))
			}
			paths = append(paths, p)
		}
	}
	repo, done, err := o.open()
	if err != nil {
		return failure("git_commit", err)
	}
	defer done()
	wt, err := repo.Worktree()
	if err != nil {
		return failure("git_commit", err)
	}
	if args["all"] == true {
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			return failure("git_commit", fmt.Errorf("stage all: %w", err))
		}
	}
	for _, p := range paths {
		if _, err := wt.Add(p); err != nil {
			// A deleted file is staged by removing it from the index.
			if _, rerr := wt.Remove(p); rerr != nil {
				return failure("git_commit", fmt.Errorf("stage %s: %w", p, err))
			}
		}
	}
	sig := o.author(repo)
	sig.When = time.Now()
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &sig, AllowEmptyCommits: false})
	if errors.Is(err, git.ErrEmptyCommit) {
		return skills.Failed(wire.ErrExecutionFailed, "git_commit: nothing to commit; stage changes with paths or all=true")
	}
	if err != nil {
		return failure("git_commit", err)
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		return failure("git_commit", err)
	}
	stats, _ := c.StatsContext(ctx)
	branch := "detached HEAD"
	if ref, err := repo.Head(); err == nil && ref.Name().IsBranch() {
		branch = ref.Name().Short()
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(fmt.Sprintf("[%s %s] %s\n%d files changed", branch, h.String()[:7], firstLine(msg), len(stats)))}}
}

// author is Options' author, else the repository's user.name and
// user.email, else the defaults.
func (o Options) author(repo *git.Repository) object.Signature {
	name, email := o.AuthorName, o.AuthorEmail
	if cfg, err := repo.ConfigScoped(config.LocalScope); err == nil {
		name, email = cmpOr(name, cfg.User.Name), cmpOr(email, cfg.User.Email)
	}
	return object.Signature{Name: cmpOr(name, DefaultAuthorName), Email: cmpOr(email, DefaultAuthorEmail)}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
