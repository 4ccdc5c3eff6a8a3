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

// Limits of glob.
const (
	// maxGlobPattern bounds a glob pattern (and grep's glob), in bytes: the
	// matcher's work on one name grows with it.
	maxGlobPattern = 1024
	// maxGlobAlternatives bounds how many patterns a glob's braces expand
	// to: doublestar walks each alternative separately, so {a,b,c,d}
	// repeated 40 times would be 4^40 walks.
	maxGlobAlternatives = 1024
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
	if len(pattern) > maxGlobPattern {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("glob: pattern is %d bytes, longer than the limit of %d", len(pattern), maxGlobPattern))
	}
	if n := braceAlternatives(pattern); n > maxGlobAlternatives {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("glob: pattern's braces expand to more than %d alternatives; use fewer {a,b} groups or **", maxGlobAlternatives))
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
	sub, err := fs.Sub(globFS{&jailFS{ctx: ctx, ops: o.Files}}, base)
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("glob: %v", err))
	}
	// WithFailOnIOErrors: without it doublestar takes the error jailFS
	// returns once ctx is done for a missing file and goes on walking
	// after the deadline. globFS turns the errors it should skip into
	// fs.ErrNotExist, which doublestar skips even so.
	opts := []doublestar.GlobOption{doublestar.WithNoFollow(), doublestar.WithFailOnIOErrors()}
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

// globFS is a jailFS for doublestar run WithFailOnIOErrors: the errors that
// must end the walk (ctx done, errWalkLimit) are returned as they are, any
// other (an unreadable directory, a name the jail refuses) as one that is
// fs.ErrNotExist, so that it is skipped as doublestar does by default.
type globFS struct{ *jailFS }

func (g globFS) fail(err error) error {
	if err == nil || errors.Is(err, errWalkLimit) || g.ctx.Err() != nil {
		return err
	}
	return skippedErr{err}
}

// Stat implements fs.StatFS.
func (g globFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := g.jailFS.Stat(name)
	return fi, g.fail(err)
}

// ReadDir implements fs.ReadDirFS.
func (g globFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := g.jailFS.ReadDir(name)
	return entries, g.fail(err)
}

// skippedErr is an error glob skips like a missing file.
type skippedErr struct{ err error }

func (e skippedErr) Error() string        { return e.err.Error() }
func (e skippedErr) Unwrap() error        { return e.err }
func (e skippedErr) Is(target error) bool { return target == fs.ErrNotExist }

// braceAlternatives is how many patterns pattern's {a,b} groups expand
// to: the product of its groups' counts, a group's count being the sum of
// its alternatives'. It saturates above maxGlobAlternatives. An
// unbalanced brace counts as a literal character; a backslash escapes.
func braceAlternatives(pattern string) int {
	i := 0
	// seq counts a sequence up to an unmatched '}' or, inside a group, ','.
	var seq func(inGroup bool) int
	seq = func(inGroup bool) int {
		n := 1
		for i < len(pattern) {
			switch c := pattern[i]; {
			case c == '\\':
				i += 2
			case c == '{':
				open := i
				i++
				sum := seq(true)
				for i < len(pattern) && pattern[i] == ',' {
					i++
					sum = min(sum+seq(true), maxGlobAlternatives+1)
				}
				if i >= len(pattern) { // unbalanced: a literal {
					i = open + 1
					continue
				}
				i++ // '}'
				n = min(n*sum, maxGlobAlternatives+1)
			case inGroup && (c == ',' || c == '}'):
				return n
			default:
				i++
			}
		}
		return n
	}
	return seq(false)
}
