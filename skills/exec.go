package skills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/proc"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// Defaults of ExecOptions.
const (
	// DefaultTimeout applies to tools that set no timeout_ms.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxTimeout caps every tool's timeout.
	DefaultMaxTimeout = 300 * time.Second
)

// ExitUnavailable is the exit status (EX_UNAVAILABLE of sysexits.h) by
// which a tool binary says that what it needs does not exist on this
// machine (no thermal sensor, no GPIO): the call fails with not_found
// rather than execution_failed, so the LLM does not retry it.
const ExitUnavailable = 69

// errorTailBytes is how much of the end of stderr goes into the error message.
const errorTailBytes = 1024

// ExecOptions tunes Execute. The zero value is ready to use.
type ExecOptions struct {
	// DefaultTimeout is used when the tool sets no timeout_ms; zero means
	// DefaultTimeout.
	DefaultTimeout time.Duration
	// MaxTimeout caps any timeout; zero means DefaultMaxTimeout.
	MaxTimeout time.Duration
	// Granted are the permissions of this agent; see Allowed.
	Granted []string
	// Env is the tool's environment; nil means proc.MinimalEnv().
	// EVOCLAW_TOOL is always set on top.
	Env []string
	// MaxOutput is how many bytes of stdout and of stderr are kept; zero
	// means proc.DefaultMaxOutput.
	MaxOutput int
	// Workspace is the one directory a sandboxed tool may write (absolute);
	// empty means none: the tool sees a read-only system (and, under
	// bubblewrap, a private /tmp). Tools with sandboxing "none" are not confined.
	Workspace string
	// LookPath finds sandbox programs; nil means exec.LookPath. Tests set
	// it to simulate a machine without them.
	LookPath func(file string) (string, error)
}

// Execute runs one call of t with args and never returns a Go error: every
// failure is an Output with an error block (a wire.ErrorType and a message
// for the LLM). The tool's stdout, valid UTF-8, is its text block, kept
// for a failed run too; ExitCode is set once the binary ran (-1 when a
// signal ended it, a timeout included); ResultBytes counts stdout beyond
// ExecOptions.MaxOutput when it was cut.
//
// In order: the tool's permissions must all be granted (permission_denied),
// args must fit its parameters (invalid_params), defaults are filled in,
// and the binary is resolved through symlinks and must still lie inside the
// skill directory (permission_denied) and exist (not_found) and be
// executable (permission_denied). It runs in the skill directory with the
// timeout of the tool, or of the options, clamped to MaxTimeout (timeout).
// Exit status ExitUnavailable is not_found; any other non-zero exit or a
// crash is execution_failed; exit 0 is success with
// stdout as the Result. A done ctx stops the tool: its deadline counts as
// timeout, a cancellation as interrupted. An OutputFunc on ctx (WithOutput)
// sees the output while the binary runs.
func Execute(ctx context.Context, t Tool, args map[string]any, o ExecOptions) Output {
	start := time.Now()
	out := execute(ctx, t, args, o)
	out.Elapsed = time.Since(start)
	return out
}

func execute(ctx context.Context, t Tool, args map[string]any, o ExecOptions) Output {
	if ok, missing := Allowed(t, o.Granted); !ok {
		return Denied(t.Name, missing)
	}
	if err := t.Validate(args); err != nil {
		return Failed(wire.ErrInvalidParams, err.Error())
	}
	argv, stdin, err := encodeArgs(t.WithDefaults(args))
	if err != nil {
		return Failed(wire.ErrInvalidParams, fmt.Sprintf("invalid parameters for %q: %v", t.Name, err))
	}
	bin, dir, fail := resolveBinary(t)
	if fail != nil {
		return *fail
	}
	prog, argv, err := sandbox.Wrap(o.sandboxPolicy(t, dir), bin, argv, dir)
	if err != nil {
		return Failed(wire.ErrExecutionFailed, fmt.Sprintf("tool %q was not run: %v", t.Name, err))
	}
	env := slices.Clip(o.Env)
	if env == nil {
		env = proc.MinimalEnv()
	}
	timeout := o.timeout(t)
	res, err := proc.Run(ctx, proc.Spec{
		Path:      prog,
		Args:      argv,
		Stdin:     stdin,
		Dir:       dir,
		Env:       append(env, "EVOCLAW_TOOL="+t.Name),
		Timeout:   timeout,
		MaxOutput: o.MaxOutput,
		OnOutput:  StreamOf(ctx),
	})
	// proc.Run returns an error with a result only for a process the
	// context stopped, which it killed; any other error means it never ran.
	if err != nil && res.Signal == "" {
		return startFailure(t, err)
	}
	stdout := text(res.Stdout, res.StdoutBytes > int64(len(res.Stdout)))
	out := Output{
		Stderr:    text(res.Stderr, res.StderrBytes > int64(len(res.Stderr))),
		ExitCode:  &res.ExitCode,
		Truncated: res.StdoutBytes > int64(len(res.Stdout)),
	}
	if out.Truncated {
		out.ResultBytes = res.StdoutBytes
	}
	switch {
	case t.Output == OutputContent && err == nil && !res.TimedOut && res.ExitCode == 0 && !out.Truncated:
		blocks, perr := ParseContent(res.Stdout)
		if perr != nil {
			out.Content = append(out.Content, ErrorBlock(wire.ErrExecutionFailed, fmt.Sprintf("tool %q printed no valid content envelope: %v", t.Name, perr)))
			return out
		}
		out.Content = blocks
		return out
	case t.Output == OutputContent && out.Truncated && err == nil && !res.TimedOut && res.ExitCode == 0:
		out.Content = append(out.Content, ErrorBlock(wire.ErrExecutionFailed,
			fmt.Sprintf("tool %q printed %d bytes, more than the output limit: its content envelope was cut", t.Name, res.StdoutBytes)))
		return out
	case stdout != "":
		out.Content = append(out.Content, TextBlock(stdout))
	}
	var code wire.ErrorType
	var msg string
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = wire.ErrTimeout, fmt.Sprintf("tool %q timed out after %v (request deadline)", t.Name, res.Elapsed.Round(time.Millisecond))
	case err != nil:
		code, msg = wire.ErrInterrupted, fmt.Sprintf("tool %q was interrupted: %v", t.Name, context.Cause(ctx))
	case res.TimedOut:
		code, msg = wire.ErrTimeout, fmt.Sprintf("tool %q timed out after %v", t.Name, timeout)
	case res.Signal != "":
		code, msg = wire.ErrExecutionFailed, fmt.Sprintf("tool %q was killed by signal %s%s", t.Name, res.Signal, errorTail(out.Stderr, stdout))
	case res.ExitCode == ExitUnavailable:
		code, msg = wire.ErrNotFound, fmt.Sprintf("tool %q: not available on this machine%s", t.Name, errorTail(out.Stderr, stdout))
	case res.ExitCode != 0:
		code, msg = wire.ErrExecutionFailed, fmt.Sprintf("tool %q failed with exit code %d%s", t.Name, res.ExitCode, errorTail(out.Stderr, stdout))
	}
	if code != "" {
		out.Content = append(out.Content, ErrorBlock(code, msg))
	}
	return out
}

// sandboxPolicy is the confinement of t: its sandboxing kind, the
// workspace writable, its skill directory visible, and the network only
// with the network permission.
func (o ExecOptions) sandboxPolicy(t Tool, dir string) sandbox.Policy {
	p := sandbox.Policy{Kind: t.Sandboxing, ReadOnly: []string{dir}, Network: slices.ContainsFunc(t.Permissions, func(p string) bool { return CanonicalPermission(p) == PermNetwork }), LookPath: o.LookPath}
	if o.Workspace != "" {
		p.Writable = []string{o.Workspace}
	}
	return p
}

// timeout returns the tool's timeout, or the default, capped by MaxTimeout.
func (o ExecOptions) timeout(t Tool) time.Duration {
	limit := cmpOr(o.MaxTimeout, DefaultMaxTimeout)
	if t.TimeoutMS > 0 {
		if t.TimeoutMS >= int64(limit/time.Millisecond) { // also avoids overflow
			return limit
		}
		return time.Duration(t.TimeoutMS) * time.Millisecond
	}
	return min(cmpOr(o.DefaultTimeout, DefaultTimeout), limit)
}

// cmpOr returns d, or def when d is not positive.
func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// resolveBinary returns the real paths of the tool's binary and skill
// directory, refusing a binary that resolves (through symlinks) outside
// the directory.
func resolveBinary(t Tool) (bin, dir string, fail *Output) {
	if t.Dir == "" || binaryRule(t.Binary) != "" {
		f := Failed(wire.ErrInternal, fmt.Sprintf("tool %q is misconfigured: skill directory %q, binary %q", t.Name, t.Dir, t.Binary))
		return "", "", &f
	}
	dir, err := filepath.Abs(t.Dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		f := Failed(wire.ErrNotFound, fmt.Sprintf("tool %q is not available: its skill directory is missing (%v)", t.Name, err))
		return "", "", &f
	}
	bin, err = filepath.EvalSymlinks(filepath.Join(dir, t.Binary))
	switch {
	case errors.Is(err, os.ErrNotExist):
		f := Failed(wire.ErrNotFound, fmt.Sprintf("tool %q is not available: binary %q not found in skill %q", t.Name, t.Binary, t.Skill))
		return "", "", &f
	case err != nil:
		f := Failed(wire.ErrPermissionDenied, fmt.Sprintf("tool %q: cannot resolve binary %q: %v", t.Name, t.Binary, err))
		return "", "", &f
	}
	if rel, err := filepath.Rel(dir, bin); err != nil || !filepath.IsLocal(rel) {
		f := Failed(wire.ErrPermissionDenied, fmt.Sprintf("tool %q: binary %q resolves outside its skill directory; refusing to run it", t.Name, t.Binary))
		return "", "", &f
	}
	return bin, dir, nil
}

// startFailure maps an error of proc.Run that came before the tool ran.
func startFailure(t Tool, err error) Output {
	switch {
	case errors.Is(err, proc.ErrNotFound):
		return Failed(wire.ErrNotFound, fmt.Sprintf("tool %q is not available: %v", t.Name, err))
	case errors.Is(err, proc.ErrPermission):
		return Failed(wire.ErrPermissionDenied, fmt.Sprintf("tool %q cannot be run: binary %q is not executable", t.Name, t.Binary))
	case errors.Is(err, syscall.E2BIG):
		return Failed(wire.ErrInvalidParams, fmt.Sprintf("invalid parameters for %q: the arguments are too long for a command line; pass less data", t.Name))
	case errors.Is(err, context.DeadlineExceeded):
		return Failed(wire.ErrTimeout, fmt.Sprintf("tool %q timed out before it started (request deadline)", t.Name))
	case errors.Is(err, context.Canceled):
		return Failed(wire.ErrInterrupted, fmt.Sprintf("tool %q was interrupted before it started", t.Name))
	}
	return Failed(wire.ErrInternal, fmt.Sprintf("tool %q could not be started: %v", t.Name, err))
}

// errorTail returns ": " and the end of the tool's stderr (or of stdout
// when stderr is empty), for an error message.
func errorTail(stderr, stdout string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		s = strings.TrimSpace(stdout)
	}
	if s == "" {
		return " (no output)"
	}
	if len(s) > errorTailBytes {
		s = s[len(s)-errorTailBytes:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
		s = "…" + s
	}
	return ": " + s
}

// text turns tool output into valid UTF-8. A rune cut in half by the output
// cap is dropped rather than shown as U+FFFD.
func text(b []byte, truncated bool) string {
	if truncated {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
