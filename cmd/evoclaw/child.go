package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is an evoclaw subprocess (an edge agent) started by demo and bench.
type child struct {
	name  string
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan error
	start time.Time
	// readyAfter is the time from exec to the "ready" line.
	readyAfter time.Duration
}

// startChild runs this binary with args and, added to ours, the environment
// variables env ("KEY=value"); its stderr goes to logw. It is ready when it
// prints a line containing "ready".
func startChild(name string, args []string, logw io.Writer, env ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	c := &child{name: name, cmd: exec.Command(exe, args...), ready: make(chan struct{}), done: make(chan error, 1)}
	c.cmd.Stderr = logw
	if len(env) > 0 {
		c.cmd.Env = append(os.Environ(), env...)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.start = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "ready") {
				c.readyAfter = time.Since(c.start)
				close(c.ready)
				signalled = true
			}
		}
		c.done <- c.cmd.Wait()
	}()
	return c, nil
}

// waitReady waits for the ready line, the child's exit, or ctx.
func (c *child) waitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case err := <-c.done:
		c.done <- err
		return fmt.Errorf("%s exited before it was ready: %v", c.name, err)
	case <-ctx.Done():
		return fmt.Errorf("%s not ready: %w", c.name, ctx.Err())
	}
}

// stop asks the child to exit (SIGTERM) and kills it after grace.
func (c *child) stop(grace time.Duration) error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		return err
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within %s; killed", c.name, grace)
	}
}

// memKB is a process's resident memory split by what backs it.
type memKB struct {
	RSS  int64 // VmRSS: everything resident
	Anon int64 // RssAnon: private memory (heap, stacks, SQLite cache)
	File int64 // RssFile: pages of the binary and other files, shared between
	// processes of the same binary and dropped by the kernel under pressure
}

// readMem reads a process's resident memory from /proc.
func readMem(pid int) (memKB, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memKB{}, err
	}
	var m memKB
	fields := map[string]*int64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for _, line := range strings.Split(string(b), "\n") {
		for prefix, dst := range fields {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d", dst); err != nil {
					return memKB{}, fmt.Errorf("parse %s of pid %d: %w", prefix, pid, err)
				}
			}
		}
	}
	if m.RSS == 0 {
		return memKB{}, fmt.Errorf("no VmRSS for pid %d", pid)
	}
	return m, nil
}

// String renders the split in MB.
func (m memKB) String() string {
	return fmt.Sprintf("RSS %.1f MB (private %.1f MB, binary and files %.1f MB)", float64(m.RSS)/1024, float64(m.Anon)/1024, float64(m.File)/1024)
}
