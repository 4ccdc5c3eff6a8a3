package gittools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"

	"github.com/evoclaw/evoclaw/skills"
)

func (o Options) status() skills.GoTool {
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "git_status",
			Description: "Show the workspace repository's branch and changed files, one per line as git status --short does: " +
				"two columns (staged, unstaged) of M modified, A added, D deleted, R renamed, ? untracked.",
			Parameters:  params(nil),
			Permissions: []string{skills.PermGit},
		},
		Run: func(ctx context.Context, _ map[string]any) skills.Output {
			repo, done, err := o.open()
			if err != nil {
				return failure("git_status", err)
			}
			defer done()
			head := "no commits yet"
			if ref, err := repo.Head(); err == nil {
				head = "HEAD detached at " + ref.Hash().String()[:7]
				if ref.Name().IsBranch() {
					head = "on branch " + ref.Name().Short()
				}
			}
			wt, err := repo.Worktree()
			if err != nil {
				return failure("git_status", err)
			}
			st, err := wt.StatusWithOptions(git.StatusOptions{Strategy: git.Preload})
			if err != nil {
				return failure("git_status", err)
			}
			var lines []string
			for _, name := range slices.Sorted(maps.Keys(st)) {
				fs := st[name]
				if fs.Staging == git.Unmodified && fs.Worktree == git.Unmodified {
					continue
				}
				line := fmt.Sprintf("%c%c %s", code(fs.Staging), code(fs.Worktree), name)
				if fs.Extra != "" {
					line += " <- " + fs.Extra
				}
				lines = append(lines, line)
			}
			out := text(lines, o.MaxLines, "nothing to commit, working tree clean", "changed files")
			out.Content[0].Text = head + "\n" + out.Content[0].Text
			return out
		},
	}
}

// code is the one-letter column of a status code; unmodified is a space.
func code(c git.StatusCode) rune {
	if c == git.Unmodified {
		return ' '
	}
	return rune(strings.ToUpper(string(c))[0])
}
