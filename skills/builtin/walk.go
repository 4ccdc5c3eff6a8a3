package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// maxWalkDepth bounds how deep grep and find descend.
const maxWalkDepth = 64

// errStopWalk ends a walk early without an error.
var errStopWalk = errors.New("stop walk")

// errWalkLimit means a walk visited maxWalkEntries entries.
var errWalkLimit = fmt.Errorf("visited %d entries; narrow the path", maxWalkEntries)

// skipDirs are not descended into: they are large and rarely what a
// search is after.
var skipDirs = map[string]bool{".git": true, "node_modules": true, ".hg": true, ".svn": true}

// walk calls fn for start and, when it is a directory, for everything
// under it in name order, through FileOps so the jail applies. Symlinked
// directories are reported but not entered, so a link cycle cannot loop.
func (o Options) walk(ctx context.Context, start string, fn func(name string, isDir bool) error) error {
	fi, err := o.Files.Stat(ctx, start)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return ignoreStop(fn(start, false))
	}
	visited := 0
	var visit func(dir string, depth int) error
	visit = func(dir string, depth int) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		entries, err := o.Files.ReadDir(ctx, dir)
		if err != nil {
			if dir == start {
				return err
			}
			return nil // an unreadable subdirectory is skipped, not fatal
		}
		for _, e := range entries {
			if visited++; visited > maxWalkEntries {
				return errWalkLimit
			}
			name := path.Join(dir, e.Name())
			isDir := e.IsDir()
			if err := fn(name, isDir); err != nil {
				return err
			}
			if isDir && e.Type()&fs.ModeSymlink == 0 && !skipDirs[e.Name()] && depth < maxWalkDepth {
				if err := visit(name, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return ignoreStop(visit(start, 0))
}

func ignoreStop(err error) error {
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}
