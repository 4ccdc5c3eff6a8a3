//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Run starts the process described by s, waits for it, and returns what it
// produced. See the package documentation for how it is stopped and how
// errors and results are told apart.
func Run(ctx context.Context, s Spec) (Result, error) {
	s, err := s.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("run %s: %w", s.Path, context.Cause(ctx))
	}
	c, err := start(s)
	if err != nil {
		return Result{}, err
	}
	return c.wait(ctx, s)
}

// child is a started process and the parent's ends of its pipes.
type child struct {
	cmd     *exec.Cmd
	started time.Time
	stdin   *os.File // nil when Spec.Stdin is nil
	stdout  *os.File
	stderr  *os.File
}

// start creates the pipes and starts the process in a new process group.
// The child's ends of the pipes are closed in the parent before it returns,
// so EOF on stdout and stderr means every holder has gone.
func start(s Spec) (*child, error) {
	cmd := exec.Command(s.Path, s.Args...)
	if cmd.Err != nil {
		return nil, startError(s.Path, cmd, cmd.Err)
	}
	if s.Dir != "" {
		// os.StartProcess checks Dir only when SysProcAttr is nil; without
		// this, a missing directory looks like a missing binary (ENOENT).
		if fi, err := os.Stat(s.Dir); err != nil {
			return nil, fmt.Errorf("start %s: working directory: %w", s.Path, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("start %s: working directory %s: %w", s.Path, s.Dir, syscall.ENOTDIR)
		}
	}
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var parent, inChild []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close() // the child's copies or our own on failure; nothing to report
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("create pipe: %w", err)
		}
		return r, w, nil
	}

	c := &child{cmd: cmd}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	parent, inChild = append(parent, outR), append(inChild, outW)
	errR, errW, err := pipe()
	if err != nil {
		closeAll(append(parent, inChild...))
		return nil, err
	}
	parent, inChild = append(parent, errR), append(inChild, errW)
	c.stdout, c.stderr = outR, errR
	cmd.Stdout, cmd.Stderr = outW, errW
	if s.Stdin != nil {
		inR, inW, err := pipe()
		if err != nil {
			closeAll(append(parent, inChild...))
			return nil, err
		}
		parent, inChild = append(parent, inW), append(inChild, inR)
		c.stdin = inW
		cmd.Stdin = inR
	}

	c.started = time.Now()
	err = StartTied(cmd)
	closeAll(inChild)
	if err != nil {
		closeAll(parent)
		return nil, startError(s.Path, cmd, err)
	}
	return c, nil
}

// wait feeds stdin, drains the output, enforces the deadline and reaps the
// process; it returns only when every goroutine it started has finished.
func (c *child) wait(ctx context.Context, s Spec) (Result, error) {
	pgid := c.cmd.Process.Pid
	out := &capture{max: s.MaxOutput, stream: Stdout, tap: s.OnOutput}
	errOut := &capture{max: s.MaxOutput, stream: Stderr, tap: s.OnOutput}
	var streams sync.WaitGroup
	streams.Go(func() { out.drain(c.stdout) })
	streams.Go(func() { errOut.drain(c.stderr) })
	if c.stdin != nil {
		streams.Go(func() {
			// EPIPE means the child did not want all of its input; that is
			// its business, not an error of the run.
			c.stdin.Write(s.Stdin)
			c.stdin.Close()
		})
	}

	reaped := make(chan error, 1)
	go func() { reaped <- c.cmd.Wait() }() // always received below
	if f := onStart(ctx); f != nil {
		f(pgid)
	}

	waitErr, timedOut, ctxStopped := Await(ctx, reaped, s.Timeout, func() { KillGroup(pgid) })
	elapsed := time.Since(c.started)
	// The leader is gone; anything it left in its group goes with it, so
	// that the pipes close and nothing outlives the call. The kernel keeps
	// the group's id allocated while any member lives, so this cannot hit
	// an unrelated group unless the ids wrapped around in between.
	KillGroup(pgid)

	drained := make(chan struct{})
	go func() { streams.Wait(); close(drained) }() // closes once the drains return
	grace := time.NewTimer(s.WaitDelay)
	defer grace.Stop()
	select {
	case <-drained:
	case <-grace.C:
		// A descendant that escaped the group still holds a pipe; closing
		// our ends unblocks the reads and the stdin write.
		c.closePipes()
		<-drained
	}
	c.closePipes()

	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return Result{}, fmt.Errorf("wait for %s: %w", s.Path, waitErr)
	}
	res := Result{
		Stdout:      out.buf,
		Stderr:      errOut.buf,
		StdoutBytes: out.total,
		StderrBytes: errOut.total,
		Truncated:   out.truncated() || errOut.truncated(),
		ExitCode:    c.cmd.ProcessState.ExitCode(),
		Elapsed:     elapsed,
	}
	ws, _ := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		// It exited on its own, even if the deadline fired in the same
		// instant: report what it did, not what we tried.
		return res, nil
	}
	res.Signal = signalName(ws.Signal())
	switch {
	case timedOut:
		res.TimedOut = true
	case ctxStopped:
		return res, fmt.Errorf("run %s: %w", s.Path, context.Cause(ctx))
	}
	return res, nil
}

// closePipes closes the parent's pipe ends; closing twice is harmless.
func (c *child) closePipes() {
	for _, f := range []*os.File{c.stdin, c.stdout, c.stderr} {
		if f != nil {
			f.Close() // second close returns os.ErrClosed, nothing to act on
		}
	}
}

// KillGroup sends SIGKILL to every process in the group pgid. ESRCH (the
// group is already empty) is the common case after a clean exit.
func KillGroup(pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL) // no caller can do anything about a failure
}

// signalName returns "SIGKILL" style names, falling back to the number.
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// startError classifies a failure to start the process.
func startError(path string, cmd *exec.Cmd, err error) error {
	var errno syscall.Errno
	cause := err
	if errors.As(err, &errno) {
		cause = errno
	}
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		bin := cmd.Path
		if !filepath.IsAbs(bin) && cmd.Dir != "" {
			bin = filepath.Join(cmd.Dir, bin)
		}
		if _, statErr := os.Stat(bin); statErr == nil {
			// execve reports ENOENT for a missing #! interpreter too.
			return fmt.Errorf("start %s: %w: its interpreter is missing: %w", path, ErrNotFound, cause)
		}
		return fmt.Errorf("start %s: %w: %w", path, ErrNotFound, cause)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("start %s: %w: %w", path, ErrPermission, cause)
	}
	return fmt.Errorf("start %s: %w", path, err)
}
