package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// NewGlob returns the glob tool: the paths of the workspace matching a
// doublestar pattern (src/**/*.go, *.{md,txt}), walked through FileOps so
// the jail applies. Symlinked directories are not followed.
func NewGlob(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "glob",
			Description: fmt.Sprintf("Find files in the workspace by path pattern: * matches within a name, ** any number of directories, "+
				"{a,b} alternatives, [abc] one character (e.g. src/**/*.go, **/*.{md,txt}). Lists at most %d paths, sorted; directories end in /.", o.MaxResults),
			Parameters: params([]string{"pattern"},
				"pattern", skills.TypeString, "Pattern relative to path, e.g. **/*.toml",
				"path", skills.TypeString, "Directory the pattern is relative to (default: the workspace)",
				"files_only", skills.TypeBoolean, "List only files, not directories (default false)"),
			Permissions: o.perms(skills.PermFileRead),
		},
		Run: o.guarded("glob", o.glob),
	}, nil
}

func (o Options) glob(ctx context.Context, args map[string]any) skills.Output {
	pattern := str(args, "pattern")
	if pattern == "" || strings.HasPrefix(pattern, "/") || !doublestar.ValidatePattern(pattern) {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("glob: bad pattern %q: want a relative doublestar pattern such as **/*.go", pattern))
	}
	p := cmpOr(str(args, "path"), ".")
	base, fail := o.path("glob", p)
	if fail != nil {
		return *fail
	}
	if c := path.Clean(pattern); c == ".." || strings.HasPrefix(c, "../") || strings.Contains(c, "/../") {
		return skills.Failed(wire.ErrPermissionDenied, fmt.Sprintf("glob: pattern %q leads out of the directory; use path instead", pattern))
	}
	if fi, err := o.Files.Stat(ctx, base); err != nil {
		return fileFailure(ctx, "glob", p, err)
	} else if !fi.IsDir() {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("glob: path %q is not a directory", p))
	}
	jfs := &jailFS{ctx: ctx, ops: o.Files}
	sub, err := fs.Sub(jfs, base)
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("glob: %v", err))
	}
	opts := []doublestar.GlobOption{doublestar.WithNoFollow()}
	if boolean(args, "files_only") {
		opts = append(opts, doublestar.WithFilesOnly())
	}
	h := &hits{max: o.MaxResults}
	err = doublestar.GlobWalk(sub, pattern, func(name string, d fs.DirEntry) error {
		return h.addPath(path.Join(base, name), d.IsDir())
	}, opts...)
	switch {
	case errors.Is(err, errStopWalk), err == nil:
		err = nil
	case errors.Is(err, errWalkLimit):
	default:
		return fileFailure(ctx, "glob", p, err)
	}
	return h.output("paths", err, 0)
}
