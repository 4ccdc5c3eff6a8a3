package builtin

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// NewFind returns the find tool: paths under a directory whose name
// matches a glob.
func NewFind(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "find",
			Description: fmt.Sprintf("Find files and directories in the workspace whose name matches a glob (*.go, test_*). "+
				"Lists at most %d paths; directories end in /.", o.MaxResults),
			Parameters: params([]string{"pattern"},
				"pattern", skills.TypeString, "Glob matched against each name, e.g. *.toml",
				"path", skills.TypeString, "Directory to search (default: the workspace)",
				"type", skills.TypeString, "file, dir or any (default any)"),
			Permissions: o.perms(skills.PermFileRead),
		},
		Run: o.guarded("find", o.find),
	}, nil
}

func (o Options) find(ctx context.Context, args map[string]any) skills.Output {
	glob, kind := str(args, "pattern"), cmpOr(str(args, "type"), "any")
	if _, err := path.Match(glob, ""); err != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("find: bad pattern %q: %v", glob, err))
	}
	if kind != "file" && kind != "dir" && kind != "any" {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("find: type must be file, dir or any, got %q", kind))
	}
	p := cmpOr(str(args, "path"), ".")
	start, fail := o.path("find", p)
	if fail != nil {
		return *fail
	}
	var found []string
	full := false
	skipped, err := o.walk(ctx, start, func(name string, isDir bool) error {
		if name == start || !matchBase(glob, name) || (kind == "file" && isDir) || (kind == "dir" && !isDir) {
			return nil
		}
		if isDir {
			name += "/"
		}
		found = append(found, name)
		if len(found) >= o.MaxResults {
			full = true
			return errStopWalk
		}
		return nil
	})
	if err != nil && !errors.Is(err, errWalkLimit) {
		return fileFailure(ctx, "find", p, err)
	}
	text := strings.Join(found, "\n")
	switch {
	case len(found) == 0:
		text = "no matches"
	case full:
		text += fmt.Sprintf("\n[stopped at %d paths; narrow the pattern or the path]", o.MaxResults)
	}
	if errors.Is(err, errWalkLimit) {
		text += "\n[search stopped: " + err.Error() + "]"
	}
	text += skippedNote(skipped)
	return skills.Output{Content: []skills.Block{skills.TextBlock(text)}, Truncated: full || err != nil}
}
