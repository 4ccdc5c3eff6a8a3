package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// DefaultStartTimeout bounds how long a peer may take to become ready when
// Spec.StartTimeout is zero.
const DefaultStartTimeout = 10 * time.Second

// startTries is how many free ports Start tries: a port from FreePort may
// be taken by the time the peer binds it.
const startTries = 3

// logTail is how much of a peer's log a failed test shows.
const logTail = 8000

// Spec describes a peer program for Start.
type Spec struct {
	// Name names the peer in messages: "mosquitto".
	Name string
	// Path is the program to run, from Find or Lookup.
	Path string
	// Args returns the program's arguments for serving on 127.0.0.1:port.
	// It may write configuration files; it is called again for every port
	// tried and at every Restart.
	Args func(port int) []string
	// Ready returns nil once the peer serves on addr, else an error saying
	// what is missing. log is what the peer has written since this start.
	// Nil means ready once addr accepts TCP connections (Accepts).
	Ready func(addr string, log []byte) error
	// StartTimeout bounds how long a start may take to become ready; zero
	// means DefaultStartTimeout.
	StartTimeout time.Duration
}

// Process is a peer running as a child process, in a process group of its
// own, on a loopback port, with its output in a log file. Its methods are
// called from the goroutine of the test that started it.
type Process struct {
	t       testing.TB
	spec    Spec
	logPath string
	port    int

	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed once the child is reaped
}

// Start starts the peer spec describes on a free loopback port and waits
// until it is ready, trying other ports if it fails. When the test ends the
// peer's process group is killed and, if the test failed, the tail of its
// log is shown.
func Start(t testing.TB, spec Spec) *Process {
	t.Helper()
	if spec.Ready == nil {
		spec.Ready = func(addr string, _ []byte) error { return Accepts(addr) }
	}
	if spec.StartTimeout == 0 {
		spec.StartTimeout = DefaultStartTimeout
	}
	p := &Process{t: t, spec: spec, logPath: filepath.Join(t.TempDir(), spec.Name+".log")}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			if b, err := os.ReadFile(p.logPath); err == nil {
				t.Logf("%s log (tail):\n%s", spec.Name, b[max(0, len(b)-logTail):])
			}
		}
	})
	for try := 1; ; try++ {
		p.port = FreePort(t)
		err := p.start()
		if err == nil {
			return p
		}
		if try == startTries {
			t.Fatal(err)
		}
		t.Logf("%s failed to start on port %d, trying another: %v", spec.Name, p.port, err)
	}
}

// Port returns the peer's port on 127.0.0.1.
func (p *Process) Port() int { return p.port }

// Addr returns the peer's 127.0.0.1:port.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Log returns what the peer has written so far, over all its starts.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Kill ends the peer's process group with SIGKILL, as a crash would, and
// waits until the peer is reaped. It does nothing while stopped.
func (p *Process) Kill() {
	if p.cmd == nil {
		return
	}
	killGroup(p.cmd.Process)
	<-p.exited
	p.cmd = nil
}

// Restart kills the peer if it runs and starts it again on the same port,
// failing the test if it does not become ready.
func (p *Process) Restart() {
	p.t.Helper()
	p.Kill()
	if err := p.start(); err != nil {
		p.t.Fatalf("restart %s: %v", p.spec.Name, err)
	}
}

// start launches the peer on p.port and waits until it is ready.
func (p *Process) start() error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s log: %w", p.spec.Name, err)
	}
	defer logf.Close() // the child has its own descriptor
	var logStart int64 // where this start's output begins
	if fi, err := logf.Stat(); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(p.spec.Path, p.spec.Args(p.port)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.spec.Name, err)
	}
	exited := make(chan struct{})
	go func() { // reaps the child; Kill waits for it
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited

	addr := p.Addr()
	runLog := func() []byte {
		b, _ := os.ReadFile(p.logPath)
		return b[min(logStart, int64(len(b))):]
	}
	deadline := time.Now().Add(p.spec.StartTimeout)
	for {
		select {
		case <-exited:
			p.cmd = nil
			return fmt.Errorf("%s exited during start-up on %s:\n%s", p.spec.Name, addr, runLog())
		default:
		}
		notReady := p.spec.Ready(addr, runLog())
		if notReady == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("%s not ready on %s within %v: %v\n%s", p.spec.Name, addr, p.spec.StartTimeout, notReady, runLog())
		}
		time.Sleep(pollInterval)
	}
}

// Accepts returns nil if addr accepts a TCP connection within a second.
func Accepts(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
