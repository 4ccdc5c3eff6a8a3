package gittools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// defaultLogCount is how many commits git_log shows when not asked.
const defaultLogCount = 20

func (o Options) log() skills.GoTool {
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "git_log",
			Description: fmt.Sprintf("Show the history of the workspace repository, newest first: short hash, date, author and "+
				"subject of each commit (at most %d).", o.MaxLines),
			Parameters: params(nil,
				"max_count", skills.TypeInteger, fmt.Sprintf("How many commits to show (default %d)", defaultLogCount),
				"ref", skills.TypeString, "Start from this commit, branch or tag (default HEAD)",
				"path", skills.TypeString, "Only commits that changed this file, relative to the workspace"),
			Permissions: []string{skills.PermGit},
		},
		Run: func(ctx context.Context, args map[string]any) skills.Output {
			n := integer(args, "max_count", defaultLogCount)
			if n < 1 {
				return skills.Failed(wire.ErrInvalidParams, "git_log: max_count must be at least 1")
			}
			n = min(n, o.MaxLines)
			p, err := relPath(str(args, "path"))
			if err != nil {
				return skills.Failed(wire.ErrInvalidParams, "git_log: "+err.Error())
			}
			repo, done, err := o.open()
			if err != nil {
				return failure("git_log", err)
			}
			defer done()
			opts := &git.LogOptions{Order: git.LogOrderCommitterTime}
			if ref := str(args, "ref"); ref != "" {
				h, err := repo.ResolveRevision(plumbing.Revision(ref))
				if err != nil {
					return failure("git_log", fmt.Errorf("unknown revision %q: %w", ref, err))
				}
				opts.From = *h
			}
			if p != "" {
				opts.FileName = &p
			}
			iter, err := repo.Log(opts)
			if errors.Is(err, plumbing.ErrReferenceNotFound) {
				return skills.Output{Content: []skills.Block{skills.TextBlock("no commits yet")}}
			}
			if err != nil {
				return failure("git_log", err)
			}
			defer iter.Close()
			var lines []string
			err = iter.ForEach(func(c *object.Commit) error {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
				lines = append(lines, fmt.Sprintf("%s %s %s: %s", c.Hash.String()[:7], c.Author.When.UTC().Format("2006-01-02 15:04"), c.Author.Name, subject))
				if len(lines) == n {
					return storer.ErrStop
				}
				return nil
			})
			if err != nil {
				return failure("git_log", err)
			}
			return text(lines, n, "no commits", "commits")
		},
	}
}

func (o Options) branch() skills.GoTool {
	return skills.GoTool{
		Tool: skills.Tool{
			Name:        "git_branch",
			Description: "List the branches of the workspace repository; the current one is marked with *.",
			Parameters:  params(nil),
			Permissions: []string{skills.PermGit},
		},
		Run: func(ctx context.Context, _ map[string]any) skills.Output {
			repo, done, err := o.open()
			if err != nil {
				return failure("git_branch", err)
			}
			defer done()
			var current plumbing.ReferenceName
			if ref, err := repo.Head(); err == nil {
				current = ref.Name()
			} else if ref, err := repo.Reference(plumbing.HEAD, false); err == nil {
				current = ref.Target() // unborn branch
			}
			iter, err := repo.Branches()
			if err != nil {
				return failure("git_branch", err)
			}
			var lines []string
			err = iter.ForEach(func(r *plumbing.Reference) error {
				mark := "  "
				if r.Name() == current {
					mark = "* "
				}
				lines = append(lines, fmt.Sprintf("%s%s %s", mark, r.Name().Short(), r.Hash().String()[:7]))
				return nil
			})
			if err != nil {
				return failure("git_branch", err)
			}
			if len(lines) == 0 && current != "" {
				return skills.Output{Content: []skills.Block{skills.TextBlock("* " + current.Short() + " (no commits yet)")}}
			}
			return text(lines, o.MaxLines, "no branches", "branches")
		},
	}
}
