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
// FIFOs, sockets and devices are not reported, only counted in skipped:
// opening one could block or have side effects. It stops at the first
// entry after ctx is done, so a walk overruns its deadline by at most one
// fn call or one ReadDir.
func (o Options) walk(ctx context.Context, start string, fn func(name string, isDir bool) error) (skipped int, err error) {
	fi, err := o.Files.Stat(ctx, start)
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		if special(fi.Mode()) {
			return 1, nil
		}
		return 0, ignoreStop(fn(start, false))
	}
	visited, done := 0, ctx.Done()
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
			select {
			case <-done:
				return context.Cause(ctx)
			default:
			}
			if visited++; visited > maxWalkEntries {
				return errWalkLimit
			}
			if special(e.Type()) {
				skipped++
				continue
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
	return skipped, ignoreStop(visit(start, 0))
}

// special reports a FIFO, socket or device (not a file, directory or symlink).
func special(m fs.FileMode) bool {
	return m&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0
}

// skippedNote is the line grep and find add when they skipped special files.
func skippedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("\n[skipped %d FIFOs, sockets or devices: they are not searched]", n)
}

func ignoreStop(err error) error {
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}
