package sshops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// Exec is builtin.ExecOps over SSH sessions in the remote workspace.
type Exec struct{ c *Client }

var _ builtin.ExecOps = (*Exec)(nil)

// pgidMarker starts the first stderr line of every command: the remote
// shell's pid, which is its process group (sshd makes it a session leader).
const pgidMarker = "evoclaw-pgid "

// killTimeout bounds the session that kills a command's process group.
const killTimeout = 5 * time.Second

// Exec runs req.Command with /bin/sh in the workspace; see builtin.ExecOps.
// Env is passed as exported variables, since sshd accepts few through
// the protocol.
func (e *Exec) Exec(ctx context.Context, req builtin.ExecRequest) (builtin.ExecResult, error) {
	if req.Timeout <= 0 {
		return builtin.ExecResult{}, errors.New("ssh exec: timeout must be positive")
	}
	dir, err := e.c.resolve(strings.TrimPrefix(path.Clean("/"+req.Dir), "/"))
	if err != nil {
		return builtin.ExecResult{}, err
	}
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = builtin.DefaultMaxOutput
	}
	sess, err := e.c.ssh.NewSession()
	if err != nil {
		return builtin.ExecResult{}, fmt.Errorf("ssh exec: new session: %w", err)
	}
	defer sess.Close()
	stdout := &capped{max: maxOut}
	stderr := &pgidWriter{capped: capped{max: maxOut}, found: make(chan struct{})}
	sess.Stdout, sess.Stderr = stdout, stderr

	var script strings.Builder
	fmt.Fprintf(&script, "echo %s$$ >&2; cd %s || exit 126; ", pgidMarker, quote(dir))
	for _, kv := range req.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && validEnvName(k) {
			fmt.Fprintf(&script, "export %s=%s; ", k, quote(v))
		}
	}
	fmt.Fprintf(&script, "exec /bin/sh -c %s", quote(req.Command))
	if err := sess.Start(script.String()); err != nil {
		return builtin.ExecResult{}, fmt.Errorf("ssh exec: start: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }() // received below on every path

	waitErr, timedOut, ctxStopped := proc.Await(ctx, done, req.Timeout, func() {
		e.killGroup(stderr)
		sess.Close() // unblocks Wait if the remote side is slow to notice
	})
	res := builtin.ExecResult{
		Stdout: stdout.buf, Stderr: stderr.buf,
		StdoutBytes: stdout.total, StderrBytes: stderr.total,
		TimedOut: timedOut,
	}
	var exitErr *ssh.ExitError
	switch {
	case timedOut || ctxStopped:
		res.ExitCode, res.Signal = -1, "SIGKILL"
	case waitErr == nil:
	case errors.As(waitErr, &exitErr) && exitErr.Signal() != "":
		res.ExitCode, res.Signal = -1, "SIG"+exitErr.Signal()
	case errors.As(waitErr, &exitErr):
		res.ExitCode = exitErr.ExitStatus()
	default:
		return builtin.ExecResult{}, fmt.Errorf("ssh exec: %w", waitErr)
	}
	if ctxStopped {
		return res, fmt.Errorf("ssh exec: %w", context.Cause(ctx))
	}
	return res, nil
}

// killGroup kills the command's process group from a second session.
func (e *Exec) killGroup(w *pgidWriter) {
	select {
	case <-w.found:
	case <-time.After(killTimeout):
		return // the command never reported its pid; closing the session is all we can do
	}
	s, err := e.c.ssh.NewSession()
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{})
	go func() { s.Run("kill -KILL -- -" + strconv.Itoa(w.pgid)); close(done) }() // nothing to do about a failure
	select {
	case <-done:
	case <-time.After(killTimeout):
	}
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	mu    sync.Mutex // guards the fields below; ssh copies streams from its own goroutines
	max   int
	buf   []byte
	total int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// pgidWriter takes the pid line off the start of stderr, then caps the rest.
type pgidWriter struct {
	capped
	head  []byte // bytes of the first line so far
	done  bool
	pgid  int
	found chan struct{} // closed once pgid is known
}

var _ io.Writer = (*pgidWriter)(nil)

func (w *pgidWriter) Write(p []byte) (int, error) {
	n := len(p)
	if !w.done {
		i := bytes.IndexByte(p, '\n')
		if i < 0 && len(w.head)+len(p) < 64 {
			w.head = append(w.head, p...)
			return n, nil
		}
		var line []byte
		if i >= 0 {
			line, p = append(w.head, p[:i]...), p[i+1:]
		} else {
			line = w.head
		}
		w.done = true
		if pid, err := strconv.Atoi(strings.TrimPrefix(string(line), pgidMarker)); err == nil && pid > 1 && strings.HasPrefix(string(line), pgidMarker) {
			w.pgid = pid
			close(w.found)
		} else {
			p = append(line, p...) // not our marker: keep it as output
		}
	}
	w.capped.Write(p)
	return n, nil
}

// quote single-quotes s for a POSIX shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// validEnvName reports whether k is a portable environment variable name.
func validEnvName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := range len(k) {
		c := k[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
