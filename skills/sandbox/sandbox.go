// Package sandbox turns a command into the same command run inside an OS
// sandbox: bubblewrap or firejail. The sandbox is the security boundary of
// tool execution; path jails and the shell denylist only catch mistakes.
//
// Both engines give the same view (see SystemDirs and EtcFiles): the
// system's programs and libraries and a minimal /etc read-only, the
// policy's ReadOnly directories read-only, its Writable directories
// read-write, a private /tmp, a fresh /proc and a minimal /dev. Homes,
// /root, /run, /var, /srv, /opt, /mnt, /sys, the secrets of /etc and
// evoclaw's data directories are not there, and with them every host
// Unix socket on the file system. The command holds no capability (not
// even when the agent runs as root), runs with no_new_privs (setuid and
// file capabilities gain nothing), in its own pid, ipc and uts
// namespaces, and without the network unless the policy allows it. A
// sandbox that is asked for but not installed is an error
// (ErrUnavailable), never a silent fallback to running unsandboxed.
//
// The sandbox process stays in the caller's process group, so killing the
// group at a timeout kills the sandbox; the command inside lives in the
// sandbox's pid namespace, which ends with it (bubblewrap:
// --die-with-parent). When the agent dies, the parent-death signal
// skills/proc gives every child ends the sandbox process, and with it the
// namespace (firejail's sandbox process dies with firejail the same way).
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Kinds of sandbox; the values are those of skill.toml's sandboxing key.
const (
	None       = "none"
	Bubblewrap = "bubblewrap"
	Firejail   = "firejail"
)

// Errors of Wrap; test with errors.Is.
var (
	// ErrUnavailable means the requested sandbox is not installed.
	ErrUnavailable = errors.New("sandbox not installed")
	// ErrUnknown means the policy names no known sandbox.
	ErrUnknown = errors.New("unknown sandbox")
)

// Policy says how to confine one command.
type Policy struct {
	// Kind is None, Bubblewrap or Firejail; empty means None.
	Kind string
	// Writable are existing absolute directories the command may read and
	// write (the workspace); nothing else outside /tmp is writable.
	Writable []string
	// ReadOnly are existing absolute directories the command may read
	// (its skill directory); beyond them it sees only the system.
	ReadOnly []string
	// Network allows network access (and with it the host's abstract
	// Unix sockets, which live in the network namespace); false gives the
	// command only a loopback interface of its own (bubblewrap) or none
	// (firejail).
	Network bool
	// LookPath finds the sandbox binary; nil means exec.LookPath. Tests
	// replace it to simulate a machine without the sandbox.
	LookPath func(file string) (string, error)
}

// binaries maps a kind to the program that implements it.
var binaries = map[string]string{Bubblewrap: "bwrap", Firejail: "firejail"}

// Wrap returns the program and arguments that run path with args under p,
// in the working directory dir (absolute). With kind None it returns path
// and args unchanged.
func Wrap(p Policy, path string, args []string, dir string) (string, []string, error) {
	if p.Kind == "" || p.Kind == None {
		return path, args, nil
	}
	bin, ok := binaries[p.Kind]
	if !ok {
		return "", nil, fmt.Errorf("%w %q (want none, bubblewrap or firejail)", ErrUnknown, p.Kind)
	}
	look := p.LookPath
	if look == nil {
		look = exec.LookPath
	}
	prog, err := look(bin)
	if err != nil {
		return "", nil, fmt.Errorf("%w: sandboxing %q needs %s, which was not found (%v); install it or change the tool's sandboxing", ErrUnavailable, p.Kind, bin, err)
	}
	own, err := binds(p)
	if err != nil {
		return "", nil, err
	}
	var argv []string
	switch p.Kind {
	case Bubblewrap:
		argv = bwrapArgs(p, dir, own)
	case Firejail:
		argv = firejailArgs(p, own)
	}
	argv = append(argv, "--", path)
	return prog, append(argv, args...), nil
}

// bind is one of the policy's own directories: src (symlinks resolved)
// shown at dst, writable when rw.
type bind struct {
	src, dst string
	rw       bool
}

// binds lists the policy's directories, each at the path given and, when
// that path goes through a symlink, also at its real path, so the command
// finds it under either name. A missing directory is an error: the tool
// would otherwise run without its workspace.
func binds(p Policy) ([]bind, error) {
	var out []bind
	add := func(d string, rw bool) error {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("sandbox directory %q is not absolute", d)
		}
		d = filepath.Clean(d)
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fmt.Errorf("sandbox directory: %w", err)
		}
		if d == "/" || real == "/" {
			return fmt.Errorf("sandbox directory %q is the root directory", d)
		}
		out = append(out, bind{src: real, dst: d, rw: rw})
		if real != d {
			out = append(out, bind{src: real, dst: real, rw: rw})
		}
		return nil
	}
	for _, d := range p.ReadOnly {
		if err := add(d, false); err != nil {
			return nil, err
		}
	}
	for _, d := range p.Writable {
		if err := add(d, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}
