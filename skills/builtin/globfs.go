package builtin

import (
	"context"
	"errors"
	"io"
	"io/fs"
)

// jailFS is an fs.FS over FileOps, so that libraries walking an fs.FS
// (doublestar) reach files only through the jail. It counts directory
// entries and fails past maxWalkEntries, and stops when ctx is done.
type jailFS struct {
	ctx     context.Context
	ops     FileOps
	visited int // directory entries listed so far; one walk uses one jailFS
}

var (
	_ fs.ReadDirFS = (*jailFS)(nil)
	_ fs.StatFS    = (*jailFS)(nil)
)

func (j *jailFS) check(op, name string) error {
	if err := j.ctx.Err(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: context.Cause(j.ctx)}
	}
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}

// Open implements fs.FS: a directory is opened for ReadDir only, a
// regular file through FileOps.Open.
func (j *jailFS) Open(name string) (fs.File, error) {
	fi, err := j.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return &jailDir{fs: j, name: name, info: fi}, nil
	}
	rc, fi, err := j.ops.Open(j.ctx, name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return jailFile{ReadCloser: rc, info: fi}, nil
}

// Stat implements fs.StatFS.
func (j *jailFS) Stat(name string) (fs.FileInfo, error) {
	if err := j.check("stat", name); err != nil {
		return nil, err
	}
	fi, err := j.ops.Stat(j.ctx, name)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return fi, nil
}

// ReadDir implements fs.ReadDirFS.
func (j *jailFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := j.check("readdir", name); err != nil {
		return nil, err
	}
	entries, err := j.ops.ReadDir(j.ctx, name)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	if j.visited += len(entries); j.visited > maxWalkEntries {
		return nil, errWalkLimit
	}
	// FIFOs, sockets and devices are left out: nothing may open them.
	out := entries[:0:0]
	for _, e := range entries {
		if !special(e.Type()) {
			out = append(out, e)
		}
	}
	return out, nil
}

type jailFile struct {
	io.ReadCloser
	info fs.FileInfo
}

func (f jailFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// jailDir is an open directory of a jailFS.
type jailDir struct {
	fs      *jailFS
	name    string
	info    fs.FileInfo
	entries []fs.DirEntry
	read    bool
}

func (d *jailDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *jailDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *jailDir) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *jailDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		entries, err := d.fs.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.entries, d.read = entries, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}
