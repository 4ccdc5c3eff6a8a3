// Package sandbox turns a command into the same command run inside an OS
// sandbox: bubblewrap or firejail. The sandbox is the security boundary of
// tool execution; path jails and the shell denylist only catch mistakes.
//
// Inside, the whole file system is read-only, only the policy's writable
// directories can be written, and there is no network unless the policy
// allows it. Under bubblewrap /tmp is a private empty tmpfs; under
// firejail it is read-only like the rest. A sandbox that is asked for but
// not installed is an error (ErrUnavailable), never a silent fallback to
// running unsandboxed.
//
// The sandbox process stays in the caller's process group (no new session),
// so killing the group at a timeout kills the sandbox and everything in it;
// bubblewrap also gets --die-with-parent.
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
	// Writable are absolute directories the command may write (the
	// workspace); everything else is read-only.
	Writable []string
	// ReadOnly are absolute directories made visible read-only even where
	// bubblewrap's private /tmp would hide them (a skill directory under /tmp).
	ReadOnly []string
	// Network allows network access; false gives the command only a
	// loopback interface of its own (bubblewrap) or none (firejail).
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
	for _, d := range append(append([]string{}, p.Writable...), p.ReadOnly...) {
		if !filepath.IsAbs(d) {
			return "", nil, fmt.Errorf("sandbox directory %q is not absolute", d)
		}
	}
	var argv []string
	switch p.Kind {
	case Bubblewrap:
		argv = bwrapArgs(p, dir)
	case Firejail:
		argv = firejailArgs(p)
	}
	argv = append(argv, "--", path)
	return prog, append(argv, args...), nil
}

// bwrapArgs confines with bubblewrap: read-only root, fresh /dev, /proc
// and /tmp, every namespace unshared, the listed directories bound on top.
func bwrapArgs(p Policy, dir string) []string {
	a := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--unshare-all",
		"--die-with-parent",
	}
	if p.Network {
		a = append(a, "--share-net")
	}
	// Binds come after the tmpfs, so a directory under /tmp shows through.
	for _, d := range p.ReadOnly {
		a = append(a, "--ro-bind", d, d)
	}
	for _, d := range p.Writable {
		a = append(a, "--bind", d, d)
	}
	if dir != "" {
		a = append(a, "--chdir", dir)
	}
	return a
}

// firejailArgs confines with firejail: no profile (the policy says
// everything), read-only root (/tmp included), writable directories.
func firejailArgs(p Policy) []string {
	a := []string{"--quiet", "--noprofile", "--read-only=/"}
	for _, d := range p.Writable {
		a = append(a, "--read-write="+d)
	}
	if !p.Network {
		a = append(a, "--net=none")
	}
	return a
}
