//go:build unix

package mcptools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/evoclaw/evoclaw/skills/proc"
)

// stdioTransport runs a stdio MCP server the way skills/proc runs a tool:
// in a process group of its own, with SIGKILL when the agent dies (Linux),
// and with the whole group killed when the session ends, so that neither
// the server nor what it started outlives its session or the agent: a
// keeper in the group kills it when the agent dies, and the group file
// lets the agent's next start kill what the keeper did not.
type stdioTransport struct {
	cmd *exec.Cmd
	// grace is how long Close waits after closing the server's input, and
	// again after SIGTERM, before the next step.
	grace time.Duration
	// stall bounds one write to the server's input; a server that reads
	// nothing for that long is killed.
	stall time.Duration
	// groups records the server's group while it runs; may be nil.
	groups *groupFile
	// log is told of the lines of the server's output that are not
	// messages (droppedLines); nil discards them.
	log *slog.Logger

	proc *serverProc // the server Connect started
}

// lastWords says how the server ended, once it has within wait, and
// how its standard error ended; "" while it runs or before Connect.
func (t *stdioTransport) lastWords(wait time.Duration) string {
	if t.proc == nil {
		return ""
	}
	return t.proc.lastWords(wait)
}

// Connect starts the server and speaks newline-delimited JSON with it.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	// Its standard error on a pipe of ours, not exec's copying goroutine:
	// Wait would wait for what the server started to close it too.
	t.cmd.Stdin, t.cmd.Stdout, t.cmd.Stderr = inR, outW, errW
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = proc.StartTied(t.cmd)
	inR.Close() // the child's ends; ours stay open
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	t.groups.add(t.cmd.Process.Pid)
	// Without a keeper (no /bin/sh), what the server starts outlives a
	// killed agent until its next start (groupFile).
	k, _ := startKeeper(t.cmd.Process.Pid)
	p := &serverProc{cmd: t.cmd, in: inW, out: outR, errR: errR, stderr: readTail(errR), grace: t.grace, stall: t.stall,
		groups: t.groups, keeper: k, exited: make(chan struct{})}
	t.proc = p
	go p.reap()
	g := guardLists(nil)
	out := newFrameReader(stdoutOf{p}, g.lineLimit, "")
	out.messages, out.dropped = true, droppedLines(t.log)
	conn, err := (&mcp.IOTransport{Reader: readCloser{out}, Writer: p}).Connect(ctx)
	if err != nil {
		p.Close()
		return nil, err
	}
	g.Connection = conn
	return g, nil
}

// serverProc is a running stdio server: its pipes and its process group.
// Writes go to its standard input; Close stops it.
//
// A server that sends requests and never reads the answers would otherwise
// grow the agent without bound: the SDK queues every message it reads for
// its handlers, which wait for their answers to be written. So reading
// stops while a write waits for the server to make room, and a write that
// waits longer than stall kills the server.
type serverProc struct {
	cmd    *exec.Cmd
	in     *os.File // the server's standard input
	out    *os.File // its standard output
	errR   *os.File // its standard error, read into stderr
	stderr *stderrTail
	grace  time.Duration
	stall  time.Duration
	groups *groupFile // forgets the group once it is killed
	keeper *keeper    // kills the group if the agent dies; may be nil

	writing sync.Mutex // held by Write while it writes; Read waits for it
	stalled error      // set by Write, under writing, when it killed the server

	exited  chan struct{} // closed by reap when the server has exited
	waitErr error         // set by reap before exited is closed

	closeOnce sync.Once
	closeErr  error
}

// reap waits for the server's exit. It ends with the server, which Close
// makes sure of.
func (p *serverProc) reap() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

// Write writes to the server's input within the stall bound.
func (p *serverProc) Write(b []byte) (int, error) {
	p.writing.Lock()
	defer p.writing.Unlock()
	if err := p.in.SetWriteDeadline(time.Now().Add(p.stall)); err != nil {
		return 0, err
	}
	n, err := p.in.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		proc.KillGroup(p.cmd.Process.Pid) // its output ends, and with it the session
		p.stalled = fmt.Errorf("%w: it read none of its input for %v and was stopped", ErrStalled, p.stall)
		return n, p.stalled
	}
	return n, err
}

// Close stops the server as the MCP specification asks: its input is
// closed, then after the grace period it gets SIGTERM, then SIGKILL. Its
// whole process group is killed once it has exited, so that processes it
// started do not outlive it. Close returns the server's exit error.
func (p *serverProc) Close() error {
	p.closeOnce.Do(func() {
		pgid := p.cmd.Process.Pid
		p.in.Close() // a second close only reports os.ErrClosed
		if !p.await(p.grace) {
			syscall.Kill(-pgid, syscall.SIGTERM) // ESRCH: the group is gone, which is the aim
			if !p.await(p.grace) {
				proc.KillGroup(pgid)
				<-p.exited
			}
		}
		proc.KillGroup(pgid) // what the server left running in its group, and its keeper
		p.keeper.stop()
		p.groups.remove(pgid)
		p.out.Close()
		// What the server moved out of its group may hold its standard
		// error open: its end is not waited for beyond a moment.
		p.stderrEnd()
		p.errR.Close()
		p.closeErr = p.waitErr
	})
	return p.closeErr
}

// stderrEnd waits a moment for the server's standard error to end, which
// comes just after its exit.
func (p *serverProc) stderrEnd() {
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-p.stderr.done:
	case <-t.C:
	}
}

// lastWords says how the server ended, once it has within wait, and
// how its standard error ended; "" while it runs.
func (p *serverProc) lastWords(wait time.Duration) string {
	select {
	case <-p.exited:
	default:
		if !p.await(wait) {
			return ""
		}
	}
	p.stderrEnd()
	return ended(p.waitErr, p.stderr)
}

// await reports whether the server exits within d.
func (p *serverProc) await(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// stdoutOf reads a server's standard output; closing it does nothing, since
// the session ends by closing the server's input (serverProc.Close).
type stdoutOf struct{ p *serverProc }

// Read reads the server's output once no write is waiting (serverProc).
// The end of the output of a server killed for a stall is that stall.
func (s stdoutOf) Read(b []byte) (int, error) {
	s.p.writing.Lock()
	stalled := s.p.stalled
	s.p.writing.Unlock()
	if stalled != nil {
		return 0, stalled
	}
	return s.p.out.Read(b)
}
func (stdoutOf) Close() error { return nil }

// readCloser is a server's bounded output (frameReader); closing it does
// nothing, as closing stdoutOf does.
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }
