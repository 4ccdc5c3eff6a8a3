package chaos

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

// stopGrace is how long a stopped child gets to exit before it is killed.
const stopGrace = 5 * time.Second

// process is a child process of the evoclaw binary. It is ready when it
// prints a line containing "ready" on stdout.
type process struct {
	name  string
	cmd   *exec.Cmd
	ready chan string   // receives the ready line once
	done  chan struct{} // closed when the process has exited
	err   error         // the exit status; read after done
	// stdin and lines are set by startInteractive: lines receives every
	// stdout line after the ready line, and is closed when stdout ends.
	stdin io.WriteCloser
	lines chan string
}

// maxLines bounds the stdout lines of an interactive child not yet read.
const maxLines = 1024

// startProcess runs bin with args; stderr is appended to logPath.
func startProcess(name, bin string, args []string, logPath string, env ...string) (*process, error) {
	return start(name, bin, args, logPath, false, env)
}

// startInteractive is startProcess with a pipe to the child's stdin and
// its stdout lines after the ready line in lines.
func startInteractive(name, bin string, args []string, logPath string) (*process, error) {
	return start(name, bin, args, logPath, true, nil)
}

func start(name, bin string, args []string, logPath string, interactive bool, env []string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer logf.Close() // the child holds its own descriptor
	p := &process{name: name, cmd: exec.Command(bin, args...), ready: make(chan string, 1), done: make(chan struct{})}
	p.cmd.Stderr = logf
	p.cmd.Env = append(os.Environ(), env...)
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if interactive {
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		p.lines = make(chan string, maxLines)
	}
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

// waitReady returns the ready line, or fails when the child exits first or
// ctx ends.
func (p *process) waitReady(ctx context.Context) (string, error) {
	select {
	case line := <-p.ready:
		return line, nil
	case <-p.done:
		return "", fmt.Errorf("%s exited before it was ready: %v", p.name, p.err)
	case <-ctx.Done():
		return "", fmt.Errorf("%s not ready: %w", p.name, ctx.Err())
	}
}

// pid is the child's process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// stop asks the child to exit (SIGTERM) and kills it after stopGrace. It
// may be called on a child that already exited.
func (p *process) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if p.stdin != nil {
		p.stdin.Close() // an interactive child ends when its input does
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		_ = p.kill()
		return fmt.Errorf("%s did not stop within %s; killed", p.name, stopGrace)
	}
}
