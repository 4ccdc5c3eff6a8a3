package builtin

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/evoclaw/evoclaw/skills/proc"
)

// ErrOutsideWorkspace means a path leads out of the workspace, by ".." or
// an absolute path elsewhere or a symlink. Tools report it as
// permission_denied.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// ErrNotRegular means a path names a FIFO, socket, device or other file
// that is not a regular file: opening or reading it could block forever or
// have side effects, so file tools refuse it (invalid_params).
var ErrNotRegular = errors.New("not a regular file")

// FileOps is how file tools reach files. Names are slash-separated paths
// relative to the workspace root ("." is the root), already checked to stay
// inside it lexically; an implementation must still refuse symlinks
// leading out (ErrOutsideWorkspace). Errors wrap fs.ErrNotExist,
// fs.ErrPermission or ErrOutsideWorkspace where they apply.
type FileOps interface {
	// Open opens a regular file for reading and returns its info. Any
	// other type of file is refused with ErrNotRegular without blocking.
	Open(ctx context.Context, name string) (io.ReadCloser, fs.FileInfo, error)
	// WriteFile replaces name with data atomically, creating missing
	// parent directories.
	WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error
	// Stat returns the info of name, following symlinks inside the
	// workspace.
	Stat(ctx context.Context, name string) (fs.FileInfo, error)
	// ReadDir lists a directory, sorted by name.
	ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error)
}

// ExecOps is how the bash tool runs a command.
type ExecOps interface {
	// Exec runs req.Command with a POSIX shell and returns what it did.
	// A non-zero exit, a signal or the timeout are results, not errors;
	// an error means the command could not be run at all.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
}

// ExecRequest is one shell command.
type ExecRequest struct {
	// Command is the shell command line.
	Command string
	// Dir is the working directory relative to the workspace; empty or
	// "." is the workspace root.
	Dir string
	// Env is the environment; nil means a minimal one.
	Env []string
	// Timeout bounds the run; the whole process group is killed at it.
	Timeout time.Duration
	// MaxOutput is how many bytes of each stream are kept.
	MaxOutput int
	// OnOutput, when set, sees the output while the command runs (see
	// proc.Spec.OnOutput); an ExecOps that cannot stream ignores it.
	OnOutput func(s proc.Stream, p []byte)
}

// ExecResult is what a command did.
type ExecResult struct {
	// Stdout and Stderr are the kept output.
	Stdout, Stderr []byte
	// StdoutBytes and StderrBytes count all output, kept or not.
	StdoutBytes, StderrBytes int64
	// ExitCode is the exit status, or -1 when a signal ended the command.
	ExitCode int
	// Signal names the signal that ended it, if any.
	Signal string
	// TimedOut reports that the command was killed at the timeout.
	TimedOut bool
}
