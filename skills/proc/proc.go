package proc

import (
	"errors"
	"fmt"
	"time"
)

// Defaults used by [Run] for zero fields of [Spec].
const (
	// DefaultMaxOutput is the number of bytes kept per output stream.
	DefaultMaxOutput = 1 << 20
	// DefaultWaitDelay bounds how long Run waits for the output pipes to
	// close once the child has exited and its group was killed.
	DefaultWaitDelay = time.Second
)

// Errors returned by [Run]; test for them with errors.Is.
var (
	// ErrNotFound means the binary, or the interpreter named by its #! line,
	// does not exist.
	ErrNotFound = errors.New("executable not found")
	// ErrPermission means the binary exists but may not be executed.
	ErrPermission = errors.New("not executable")
	// ErrInvalidSpec means the Spec itself is unusable (no path, no timeout).
	ErrInvalidSpec = errors.New("invalid process spec")
)

// Spec describes one process to run.
type Spec struct {
	// Path is the program to run. A name without a slash is looked up in
	// the PATH of the current process; a relative path is taken relative
	// to Dir.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Stdin is written to the child's standard input, which is then closed.
	// Nil connects standard input to the null device.
	Stdin []byte
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is the complete environment of the child. Nil means a minimal
	// one, see [MinimalEnv]; an empty non-nil slice means no variables.
	Env []string
	// Timeout is how long the child may run before its group is killed.
	// It is required and must be positive.
	Timeout time.Duration
	// MaxOutput is how many bytes of each of stdout and stderr are kept.
	// Zero means DefaultMaxOutput.
	MaxOutput int
	// WaitDelay bounds the wait for the output pipes after the child has
	// exited, for descendants that escaped the process group. Zero means
	// DefaultWaitDelay.
	WaitDelay time.Duration
	// OnOutput, when set, sees every byte the child writes, kept or not,
	// as it is read: p is valid only during the call. It runs on the
	// goroutine reading that stream, concurrently for stdout and stderr,
	// and must return at once (copy and hand off): while it runs, that
	// pipe is not read, and a child writing to a full pipe waits.
	OnOutput func(s Stream, p []byte)
}

// Stream names an output stream of the child.
type Stream string

// The streams passed to Spec.OnOutput.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Result is what a finished process produced.
type Result struct {
	// Stdout and Stderr hold at most Spec.MaxOutput bytes each.
	Stdout, Stderr []byte
	// StdoutBytes and StderrBytes count everything the child wrote,
	// including what was discarded beyond the cap.
	StdoutBytes, StderrBytes int64
	// Truncated reports whether either stream was cut at the cap.
	Truncated bool
	// ExitCode is the exit status, or -1 when a signal ended the process.
	ExitCode int
	// Signal names the signal that ended the process ("SIGKILL"), or is
	// empty when it exited.
	Signal string
	// Elapsed is the time from start until the process was reaped.
	Elapsed time.Duration
	// TimedOut reports that Run killed the process at Spec.Timeout.
	TimedOut bool
}

// withDefaults checks s and fills its zero fields.
func (s Spec) withDefaults() (Spec, error) {
	switch {
	case s.Path == "":
		return s, fmt.Errorf("%w: empty path", ErrInvalidSpec)
	case s.Timeout <= 0:
		return s, fmt.Errorf("%w: timeout must be positive, got %v", ErrInvalidSpec, s.Timeout)
	case s.MaxOutput < 0:
		return s, fmt.Errorf("%w: negative max output %d", ErrInvalidSpec, s.MaxOutput)
	case s.WaitDelay < 0:
		return s, fmt.Errorf("%w: negative wait delay %v", ErrInvalidSpec, s.WaitDelay)
	}
	if s.MaxOutput == 0 {
		s.MaxOutput = DefaultMaxOutput
	}
	if s.WaitDelay == 0 {
		s.WaitDelay = DefaultWaitDelay
	}
	if s.Env == nil {
		s.Env = MinimalEnv()
	}
	return s, nil
}
