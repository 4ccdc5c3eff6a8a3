package builtin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// Change is one file of a Batch: its new content, or its removal.
type Change struct {
	// Name is the file, relative to the workspace root.
	Name string
	// Data is the new content; ignored when Delete is set.
	Data []byte
	// Perm is the mode of a new or replaced file.
	Perm fs.FileMode
	// Delete removes the file instead.
	Delete bool
}

// Batcher is implemented by a FileOps that can change several files as
// one: all of them or, when any step fails, none.
type Batcher interface {
	// Commit applies every change or none. Files being replaced or
	// deleted must be regular files (not symlinks).
	Commit(ctx context.Context, changes []Change) error
}

var _ Batcher = Local{}

// Commit implements Batcher. Every new content is first written and
// synced to a temporary file beside its target; only then are the
// targets replaced one by one, each original kept under a backup name
// (a hard link, so the target never goes missing). When a step fails the
// steps done are undone in reverse order from the backups and the
// temporary files are removed; on success the backups are removed.
func (l Local) Commit(_ context.Context, changes []Change) (err error) {
	r, err := l.root()
	if err != nil {
		return err
	}
	defer r.Close()
	type step struct {
		c        Change
		tmp, bak string // "" when not made
		existed  bool
		done     bool
	}
	steps := make([]*step, len(changes))
	cleanup := func() {
		for _, s := range steps {
			if s == nil {
				continue
			}
			if s.tmp != "" {
				r.Remove(s.tmp) // best effort; it is ours
			}
			if s.bak != "" {
				r.Remove(s.bak)
			}
		}
	}
	// Stage: check every target and write every new content.
	for i, c := range changes {
		s := &step{c: c}
		steps[i] = s
		fi, err := r.Lstat(c.Name)
		switch {
		case err == nil && !fi.Mode().IsRegular():
			cleanup()
			return fmt.Errorf("%s is a %s, not a regular file: %w", c.Name, fileType(fi.Mode()), ErrNotRegular)
		case err == nil:
			s.existed = true
		case errors.Is(err, fs.ErrNotExist):
			if c.Delete {
				cleanup()
				return jailErr(err)
			}
		default:
			cleanup()
			return jailErr(err)
		}
		if c.Delete {
			continue
		}
		if dir := path.Dir(c.Name); dir != "." {
			if err := r.MkdirAll(dir, 0o755); err != nil {
				cleanup()
				return jailErr(err)
			}
		}
		s.tmp = TempName(c.Name, "tmp")
		if err := writeSynced(r, s.tmp, c.Data, c.Perm); err != nil {
			s.tmp = ""
			cleanup()
			return jailErr(err)
		}
	}
	// Replace, undoing on the first failure.
	undo := func() {
		for i := len(steps) - 1; i >= 0; i-- {
			s := steps[i]
			if !s.done {
				continue
			}
			if s.bak != "" {
				r.Rename(s.bak, s.c.Name) // restores the original
				s.bak = ""
			} else {
				r.Remove(s.c.Name) // it was created by this commit
			}
		}
	}
	for i, s := range steps {
		if l.commitFault != nil {
			if err := l.commitFault(i); err != nil {
				undo()
				cleanup()
				return err
			}
		}
		if s.existed {
			s.bak = TempName(s.c.Name, "bak")
			if err := r.Link(s.c.Name, s.bak); err != nil {
				s.bak = ""
				undo()
				cleanup()
				return fmt.Errorf("back up %s: %w", s.c.Name, jailErr(err))
			}
		}
		var err error
		if s.c.Delete {
			err = r.Remove(s.c.Name)
		} else {
			err = r.Rename(s.tmp, s.c.Name)
		}
		if err != nil {
			undo()
			cleanup()
			return jailErr(err)
		}
		s.tmp, s.done = "", true
	}
	cleanup() // the backups
	for _, s := range steps {
		syncDir(r, path.Dir(s.c.Name)) // durability of the renames; the change is made either way
	}
	return nil
}

// maxNameBytes is the longest name of a directory entry (NAME_MAX of
// Linux and the BSDs).
const maxNameBytes = 255

// TempName is a hidden name beside name (slash-separated) for a
// temporary file or backup of the given kind ("tmp", "bak"), random so
// that it does not exist yet. It ends in as much of name's own base as
// fits in maxNameBytes, so that a file whose name is long but valid can
// still be replaced through it.
func TempName(name, kind string) string {
	var rnd [6]byte
	rand.Read(rnd[:]) // never fails
	prefix := ".evoclaw-" + kind + "-" + hex.EncodeToString(rnd[:]) + "-"
	base := []byte(path.Base(name))
	if room := maxNameBytes - len(prefix); len(base) > room {
		base = trimPartialRune(base[:room])
	}
	return path.Join(path.Dir(name), prefix+string(base))
}

// writeSynced creates name (which must not exist) with data and syncs it,
// unless that would leave less than MinFreeBytes free (ErrDiskLow).
func writeSynced(r *os.Root, name string, data []byte, perm fs.FileMode) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	err = checkRoom(f, len(data))
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Remove(name)
	}
	return err
}

// syncDir syncs directory dir of r, making the renames in it durable. A
// directory that cannot be opened is not synced and not an error.
func syncDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	return d.Sync()
}
