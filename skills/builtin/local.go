package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/evoclaw/evoclaw/skills/proc"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// Local is FileOps on the local file system, jailed to the workspace
// directory Dir through os.Root: every path is resolved component by
// component with openat, symlinks are followed only while they stay
// inside Dir, and the check cannot be raced by swapping a component for a
// symlink between check and use.
type Local struct {
	// Dir is the workspace directory.
	Dir string

	// commitFault, when set, runs before step i of Commit; an error fails
	// the commit there (a fault seam for tests of the rollback).
	commitFault func(i int) error
}

var _ FileOps = Local{}

// root opens the workspace; each operation opens its own, so a Local
// needs no Close.
func (l Local) root() (*os.Root, error) {
	if l.Dir == "" {
		return nil, errors.New("local file ops: no workspace directory")
	}
	r, err := os.OpenRoot(l.Dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return r, nil
}

// Open opens a regular file for reading. A FIFO, socket or device is
// refused with ErrNotRegular before it is opened; should one be swapped in
// between, O_NONBLOCK keeps the open from waiting for a writer and fstat
// refuses it before any read.
func (l Local) Open(_ context.Context, name string) (io.ReadCloser, fs.FileInfo, error) {
	r, err := l.root()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close() // an open file outlives its Root
	if fi, err := r.Stat(name); err != nil {
		return nil, nil, jailErr(err)
	} else if err := regular(name, fi); err != nil {
		return nil, nil, err
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, jailErr(err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = regular(name, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// regular returns ErrNotRegular, naming the type, unless fi is a regular file.
func regular(name string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is a %s: %w", name, fileType(fi.Mode()), ErrNotRegular)
}

// fileType names the type of a file mode for a message.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "special file"
}

// WriteFile writes data to a temporary file beside name, syncs it and
// renames it over name, so a reader never sees half a file.
func (l Local) WriteFile(_ context.Context, name string, data []byte, perm fs.FileMode) error {
	r, err := l.root()
	if err != nil {
		return err
	}
	defer r.Close()
	if dir := path.Dir(name); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return jailErr(err)
		}
	}
	tmp := TempName(name, "tmp")
	if err := writeSynced(r, tmp, data, perm); err != nil {
		return jailErr(err)
	}
	if err := r.Rename(tmp, name); err != nil {
		r.Remove(tmp) // best effort; the write already failed
		return jailErr(err)
	}
	// Make the rename itself durable.
	if err := syncDir(r, path.Dir(name)); err != nil {
		return fmt.Errorf("sync directory of %s: %w", name, err)
	}
	return nil
}

// Stat returns the info of name.
func (l Local) Stat(_ context.Context, name string) (fs.FileInfo, error) {
	r, err := l.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Stat(name)
	return fi, jailErr(err)
}

// ReadDir lists a directory, sorted by name.
func (l Local) ReadDir(_ context.Context, name string) ([]fs.DirEntry, error) {
	r, err := l.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(name)
	if err != nil {
		return nil, jailErr(err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// jailErr marks os.Root's refusal of a path leading out of the workspace
// with ErrOutsideWorkspace. os.Root has no exported sentinel for it, so its
// message is matched; TestLocalJail fails if that ever changes.
func jailErr(err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: %w", ErrOutsideWorkspace, err)
	}
	return err
}

// LocalExec is ExecOps on the local machine: /bin/sh -c in the workspace,
// in its own process group (see package proc), optionally inside an OS
// sandbox whose only writable directory is the workspace.
type LocalExec struct {
	// Dir is the workspace directory.
	Dir string
	// Sandbox is sandbox.None (or empty), sandbox.Bubblewrap or
	// sandbox.Firejail.
	Sandbox string
	// Network lets a sandboxed command use the network.
	Network bool
	// LookPath finds the sandbox binary; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

var _ ExecOps = LocalExec{}

// Shell is the shell LocalExec runs commands with.
const Shell = "/bin/sh"

// Exec runs req.Command; see ExecOps.
func (e LocalExec) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	rel, err := resolve(e.Dir, cmpOr(req.Dir, "."))
	if err != nil {
		return ExecResult{}, err
	}
	dir := filepath.Join(e.Dir, filepath.FromSlash(rel))
	prog, args, err := sandbox.Wrap(sandbox.Policy{Kind: e.Sandbox, Writable: []string{e.Dir}, Network: e.Network, LookPath: e.LookPath},
		Shell, []string{"-c", req.Command}, dir)
	if err != nil {
		return ExecResult{}, err
	}
	res, err := proc.Run(ctx, proc.Spec{Path: prog, Args: args, Dir: dir, Env: req.Env, Timeout: req.Timeout, MaxOutput: req.MaxOutput,
		OnOutput: req.OnOutput})
	if err != nil && res.Signal == "" {
		return ExecResult{}, err
	}
	out := ExecResult{Stdout: res.Stdout, Stderr: res.Stderr, StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes,
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut}
	return out, err
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
