package builtin

import (
	"context"
	"errors"
	"fmt"
	"path"

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
	if len(glob) > maxGlobPattern {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("find: pattern is %d bytes, longer than the limit of %d", len(glob), maxGlobPattern))
	}
	if kind != "file" && kind != "dir" && kind != "any" {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("find: type must be file, dir or any, got %q", kind))
	}
	p := cmpOr(str(args, "path"), ".")
	start, fail := o.path("find", p)
	if fail != nil {
		return *fail
	}
	h := &hits{max: o.MaxResults}
	skipped, err := o.walk(ctx, start, func(name string, isDir bool) error {
		if name == start || !matchBase(glob, name) || (kind == "file" && isDir) || (kind == "dir" && !isDir) {
			return nil
		}
		return h.addPath(name, isDir)
	})
	if err != nil && !errors.Is(err, errWalkLimit) {
		return fileFailure(ctx, "find", p, err)
	}
	return h.output("paths", err, skipped)
}
