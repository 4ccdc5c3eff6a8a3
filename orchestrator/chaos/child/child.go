// Package child runs child processes of the evoclaw binary that announce
// on stdout, with a line containing "ready", that they serve: the agents,
// brokers and nodes of `evoclaw chaos`, and the servers and agents of
// `evoclaw demo`, `bench` and `load`.
package child

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// StopGrace is how long a stopped child gets to exit before it is killed.
const StopGrace = 5 * time.Second

// maxLines bounds the stdout lines of an interactive child not yet read.
const maxLines = 1024

// Options configure Start. The zero value is ready for use.
type Options struct {
	// Stderr receives the child's stderr; nil discards it.
	Stderr io.Writer
	// Env holds "KEY=value" variables added to this process's environment.
	Env []string
	// Interactive gives the child a pipe to its stdin (Stdin) and hands
	// its stdout lines after the ready line to Lines.
	Interactive bool
}

// Process is a running child.
type Process struct {
	// Name names the child in errors.
	Name  string
	cmd   *exec.Cmd
	ready chan string   // receives the ready line once
	done  chan struct{} // closed when the process has exited
	err   error         // the exit status; read after done
	start time.Time
	// readyAfter is the time from start to the ready line; written before
	// the line is sent on ready.
	readyAfter time.Duration
	stdin      io.WriteCloser
	lines      chan string
}

// Start runs bin with args.
func Start(name, bin string, args []string, o Options) (*Process, error) {
	p := &Process{Name: name, cmd: exec.Command(bin, args...), ready: make(chan string, 1), done: make(chan struct{})}
	p.cmd.Stderr = o.Stderr
	p.cmd.Env = append(os.Environ(), o.Env...)
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if o.Interactive {
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		p.lines = make(chan string, maxLines)
	}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			switch {
			case !signalled && strings.Contains(sc.Text(), "ready"):
				p.readyAfter = time.Since(p.start)
				p.ready <- sc.Text()
				signalled = true
			case signalled && p.lines != nil:
				p.lines <- sc.Text()
			}
		}
		if p.lines != nil {
			close(p.lines)
		}
		p.err = p.cmd.Wait()
	}()
	return p, nil
}

// StartLogged is Start with the child's stderr appended to the file at
// logPath.
func StartLogged(name, bin string, args []string, logPath string, o Options) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer logf.Close() // the child holds its own descriptor
	o.Stderr = logf
	return Start(name, bin, args, o)
}

// WaitReady returns the ready line, or fails when the child exits first or
// ctx ends.
func (p *Process) WaitReady(ctx context.Context) (string, error) {
	select {
	case line := <-p.ready:
		return line, nil
	case <-p.done:
		return "", fmt.Errorf("%s exited before it was ready: %v", p.Name, p.err)
	case <-ctx.Done():
		return "", fmt.Errorf("%s not ready: %w", p.Name, ctx.Err())
	}
}

// ReadyAfter is the time from Start to the ready line; read it after
// WaitReady returned the line.
func (p *Process) ReadyAfter() time.Duration { return p.readyAfter }

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdin is the pipe to an interactive child's stdin; nil otherwise.
func (p *Process) Stdin() io.Writer { return p.stdin }

// Lines receives an interactive child's stdout lines after the ready line
// and is closed when its stdout ends; nil otherwise.
func (p *Process) Lines() <-chan string { return p.lines }

// Kill sends SIGKILL and waits for the exit.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	<-p.done
	return nil
}

// Stop asks the child to exit (SIGTERM) and kills it after StopGrace. It
// may be called on a child that already exited.
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if p.stdin != nil {
		p.stdin.Close() // an interactive child ends when its input does
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		_ = p.Kill()
		return fmt.Errorf("%s did not stop within %s; killed", p.Name, StopGrace)
	}
}
