package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Defaults of Options.
const (
	// DefaultMaxReadBytes is how much of a file read returns at most.
	DefaultMaxReadBytes = 512 << 10
	// DefaultMaxReadLines is how many lines read returns at most.
	DefaultMaxReadLines = 2000
	// DefaultBashTimeout bounds a bash command that sets no timeout.
	DefaultBashTimeout = 30 * time.Second
	// DefaultMaxBashTimeout caps the timeout a bash call may ask for.
	DefaultMaxBashTimeout = 300 * time.Second
	// DefaultMaxOutput is how many bytes of each output stream of a bash
	// command are kept; the rest is counted and dropped.
	DefaultMaxOutput = 64 << 10
	// DefaultMaxResults caps the matches of grep and the paths of find.
	DefaultMaxResults = 200
	// DefaultMaxEditBytes is the largest file write and edit handle.
	DefaultMaxEditBytes = 4 << 20
	// DefaultFileTimeout bounds one call of read, write, edit, grep or find.
	DefaultFileTimeout = 10 * time.Second
	// DefaultMaxFileCalls is how many calls of one file tool may run at
	// once, counting calls abandoned at their deadline that are still stuck
	// in the kernel.
	DefaultMaxFileCalls = 4
)

// maxWalkEntries bounds how many directory entries one grep or find
// visits, so a huge tree costs a bounded time.
const maxWalkEntries = 100_000

// Options configure the built-in tools. Dir is required; the zero value of
// every other field means its default.
type Options struct {
	// Dir is the workspace: an absolute directory the file tools cannot
	// leave and the bash tool starts in.
	Dir string
	// Files reaches files; nil means Local{Dir}.
	Files FileOps
	// Exec runs commands; nil means LocalExec{Dir, Sandbox}.
	Exec ExecOps
	// Sandbox is the OS sandbox of the default LocalExec (none,
	// bubblewrap, firejail); ignored when Exec is set.
	Sandbox string
	// Network lets sandboxed bash commands use the network; without a
	// sandbox it changes nothing.
	Network bool
	// MaxReadBytes caps what read returns (default 512 KiB).
	MaxReadBytes int
	// MaxReadLines caps the lines read returns (default 2000).
	MaxReadLines int
	// BashTimeout is the default timeout of a command (default 30 s).
	BashTimeout time.Duration
	// MaxBashTimeout caps a command's timeout (default 300 s).
	MaxBashTimeout time.Duration
	// MaxOutput is the bytes of each stream bash keeps (default 64 KiB).
	MaxOutput int
	// MaxResults caps grep matches and find paths (default 200).
	MaxResults int
	// MaxEditBytes is the largest file write and edit handle (default 4 MiB).
	MaxEditBytes int
	// FileTimeout bounds each call of read, write, edit, grep and find
	// (default 10 s); the caller's deadline wins when earlier. At the
	// deadline the call answers timeout even if the file system does not.
	FileTimeout time.Duration
	// MaxFileCalls is how many calls of each file tool may run at once,
	// abandoned ones still stuck included (default 4); a call finding none
	// free by its deadline answers busy.
	MaxFileCalls int
	// Env is the environment of bash commands; nil means a minimal one.
	Env []string
	// Permissions are required of every tool made with these options, on
	// top of the tool's own from the design's table (file_read for read,
	// grep, find and glob; file_write for write, edit and apply_patch;
	// shell for bash; git for git_*); a toolset offers a tool only to
	// agents granted all of them.
	Permissions []string

	// realDir is Dir with symlinks resolved, for a local workspace reached
	// through a symlink: absolute paths may name either form.
	realDir string
}

// withDefaults checks o and fills its zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		return o, fmt.Errorf("built-in tools: workspace directory must be absolute, got %q", o.Dir)
	}
	o.Dir = filepath.Clean(o.Dir)
	if _, local := o.Files.(Local); o.Files == nil || local {
		if real, err := filepath.EvalSymlinks(o.Dir); err == nil && real != o.Dir {
			o.realDir = real
		}
	}
	if o.Files == nil {
		o.Files = Local{Dir: o.Dir}
	}
	if o.Exec == nil {
		o.Exec = LocalExec{Dir: o.Dir, Sandbox: o.Sandbox, Network: o.Network}
	}
	defaults.Positive(&o.MaxReadBytes, DefaultMaxReadBytes)
	defaults.Positive(&o.MaxReadLines, DefaultMaxReadLines)
	defaults.Positive(&o.MaxOutput, DefaultMaxOutput)
	defaults.Positive(&o.MaxResults, DefaultMaxResults)
	defaults.Positive(&o.MaxEditBytes, DefaultMaxEditBytes)
	defaults.Positive(&o.MaxFileCalls, DefaultMaxFileCalls)
	defaults.Positive(&o.FileTimeout, DefaultFileTimeout)
	defaults.Positive(&o.BashTimeout, DefaultBashTimeout)
	defaults.Positive(&o.MaxBashTimeout, DefaultMaxBashTimeout)
	o.BashTimeout = min(o.BashTimeout, o.MaxBashTimeout)
	return o, nil
}

// path resolves a path argument against the workspace, or returns the
// permission_denied or invalid_params output explaining why it cannot.
func (o Options) path(tool, p string) (string, *skills.Output) {
	name, err := resolve(o.Dir, p)
	if err != nil && o.realDir != "" && errors.Is(err, ErrOutsideWorkspace) {
		name, err = resolve(o.realDir, p)
	}
	if err == nil {
		return name, nil
	}
	code := wire.ErrInvalidParams
	if errors.Is(err, ErrOutsideWorkspace) {
		code = wire.ErrPermissionDenied
	}
	out := skills.Failed(code, fmt.Sprintf("%s: %v", tool, err))
	return "", &out
}

// fileFailure turns a FileOps error into an output with a stable code.
func fileFailure(ctx context.Context, tool, p string, err error) skills.Output {
	code := wire.ErrExecutionFailed
	switch {
	case errors.Is(err, ErrOutsideWorkspace):
		code = wire.ErrPermissionDenied
		return skills.Failed(code, fmt.Sprintf("%s: %q resolves outside the workspace (through a symlink); access denied", tool, p))
	case errors.Is(err, ErrNotRegular):
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("%s %q: %v; only regular files can be read or edited", tool, p, err))
	case errors.Is(err, fs.ErrNotExist):
		code = wire.ErrNotFound
	case errors.Is(err, fs.ErrPermission):
		code = wire.ErrPermissionDenied
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		code = wire.ErrTimeout
	case ctx.Err() != nil:
		code = wire.ErrInterrupted
	}
	return skills.Failed(code, fmt.Sprintf("%s %q: %v", tool, p, err))
}

// perms returns the permissions of a tool that needs own: own first, then
// Options.Permissions, without repeats.
func (o Options) perms(own ...string) []string {
	out := slices.Clone(own)
	for _, p := range o.Permissions {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// str returns a string argument; Validate has checked the type.
func str(args map[string]any, key string) string {
	s, _ := args[key].(string)
	return s
}

// integer returns an integer argument, or def when absent.
func integer(args map[string]any, key string, def int64) int64 {
	switch v := args[key].(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	case int:
		return int64(v)
	case interface{ Int64() (int64, error) }:
		if n, err := v.Int64(); err == nil {
			return n
		}
	}
	return def
}

// boolean returns a boolean argument, false when absent.
func boolean(args map[string]any, key string) bool {
	b, _ := args[key].(bool)
	return b
}

// params builds a Parameters value: props alternate name, type,
// description.
func params(required []string, props ...string) skills.Parameters {
	p := skills.Parameters{Properties: map[string]skills.Param{}, Required: required}
	for i := 0; i+2 < len(props)+1; i += 3 {
		p.Properties[props[i]] = skills.Param{Type: props[i+1], Description: props[i+2]}
	}
	return p
}
