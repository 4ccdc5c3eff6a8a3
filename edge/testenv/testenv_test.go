package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	t.Parallel()
	n := 0
	Eventually(t, time.Second, func() bool { n++; return n == 3 }, "third poll")

	f := &fakeTB{TB: t}
	f.run(func(f *fakeTB) { Eventually(f, 30*time.Millisecond, func() bool { return false }, "never true") })
	if !strings.Contains(f.fatal, "never true") || !strings.Contains(f.fatal, "30ms") {
		t.Fatalf("Eventually failure message = %q, want the message and the timeout", f.fatal)
	}
}

func TestFreePort(t *testing.T) {
	t.Parallel()
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		if p < freePortMin || p >= low {
			t.Fatalf("FreePort() = %d, want one in [%d, %d), below the ephemeral range", p, freePortMin, low)
		}
		if seen[p] {
			t.Fatalf("FreePort() returned %d twice", p)
		}
		seen[p] = true
		// Free on every address, not only on 127.0.0.1: a node told to
		// listen on 0.0.0.0 binds it too. Not a guarantee, since another
		// process may take the port meanwhile.
		if l, err := net.Listen("tcp", fmt.Sprintf(":%d", p)); err != nil {
			t.Logf("port %d taken since FreePort returned it: %v", p, err)
		} else {
			l.Close()
		}
	}
}

func TestFreePortSkipsTakenPorts(t *testing.T) {
	// Hold many ports of the range FreePort picks from: it must never
	// hand one of them out.
	held := map[int]bool{}
	for p := freePortMin; p < freePortMin+2000; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			continue
		}
		defer l.Close()
		held[p] = true
	}
	for range 100 {
		if p := FreePort(t); held[p] {
			t.Fatalf("FreePort() = %d, a port this test holds", p)
		}
	}
}

func TestMissing(t *testing.T) {
	t.Run("skips loudly by default", func(t *testing.T) {
		t.Setenv(RequirePeersEnv, "")
		f := &fakeTB{TB: t}
		f.run(func(f *fakeTB) { Missing(f, f.Skipf, "mosquitto", "apt-get install mosquitto") })
		if !strings.HasPrefix(f.skip, "SKIP: mosquitto not installed; install it (apt-get install mosquitto)") ||
			!strings.Contains(f.skip, "did NOT run") || f.fatal != "" {
			t.Fatalf("skip = %q, fatal = %q", f.skip, f.fatal)
		}
	})
	t.Run("logs where other tests go on", func(t *testing.T) {
		t.Setenv(RequirePeersEnv, "")
		f := &fakeTB{TB: t}
		f.run(func(f *fakeTB) { Missing(f, f.Logf, "mosquitto", "apt-get install mosquitto") })
		if !strings.HasPrefix(f.logged, "SKIP: mosquitto not installed") || f.skip != "" || f.fatal != "" {
			t.Fatalf("logged = %q, skip = %q, fatal = %q", f.logged, f.skip, f.fatal)
		}
	})
	t.Run("fails when peers are required", func(t *testing.T) {
		t.Setenv(RequirePeersEnv, "1")
		f := &fakeTB{TB: t}
		f.run(func(f *fakeTB) { Missing(f, f.Skipf, "mosquitto", "apt-get install mosquitto") })
		if !strings.Contains(f.fatal, "mosquitto not installed") || f.skip != "" {
			t.Fatalf("skip = %q, fatal = %q", f.skip, f.fatal)
		}
	})
}

func TestFind(t *testing.T) {
	t.Parallel()
	if p := Find(t, "sh", "dash"); !IsExecutable(p) {
		t.Fatalf("Find(sh) = %q, not executable", p)
	}
	if _, ok := Lookup("evoclaw-no-such-program"); ok {
		t.Fatal("Lookup found a program that does not exist")
	}
}

// shellPeer is a Spec for a shell script standing in for a peer: it is
// ready once it has logged "up"; script sees the port as $1.
func shellPeer(script string) Spec {
	return Spec{
		Name:  "shell",
		Path:  "/bin/sh",
		Args:  func(port int) []string { return []string{"-c", script, "sh", fmt.Sprint(port)} },
		Ready: readyOnLog("up"),
	}
}

func readyOnLog(word string) func(string, []byte) error {
	return func(_ string, log []byte) error {
		if !strings.Contains(string(log), word) {
			return errors.New("no " + word + " in the log")
		}
		return nil
	}
}

func TestStartKillRestart(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// The peer forks a child, which the group kill must end as well.
	p := Start(t, shellPeer(`sleep 61.7171 & echo $! > `+pidFile+`; echo up on $1; wait`))
	if !strings.Contains(p.Log(), fmt.Sprintf("up on %d", p.Port())) {
		t.Fatalf("log = %q, want the port %d", p.Log(), p.Port())
	}
	if p.Addr() != fmt.Sprintf("127.0.0.1:%d", p.Port()) {
		t.Fatalf("Addr() = %q", p.Addr())
	}
	child, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	p.Kill() // a second Kill does nothing
	Eventually(t, 10*time.Second, func() bool { return gone(strings.TrimSpace(string(child))) }, "the forked child to die")
	p.Restart()
	if n := strings.Count(p.Log(), fmt.Sprintf("up on %d", p.Port())); n != 2 {
		t.Fatalf("log = %q, want two starts on port %d", p.Log(), p.Port())
	}
}

// gone reports whether the process pid no longer runs (a zombie counts as gone).
func gone(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	return err != nil || strings.Contains(string(stat), ") Z ")
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	t.Run("exits", func(t *testing.T) {
		t.Parallel()
		f := &fakeTB{TB: t}
		f.run(func(f *fakeTB) { Start(f, shellPeer(`echo broken config; exit 1`)) })
		if !strings.Contains(f.fatal, "shell exited during start-up") || !strings.Contains(f.fatal, "broken config") {
			t.Fatalf("fatal = %q, want the exit and the log", f.fatal)
		}
	})
	t.Run("never ready", func(t *testing.T) {
		t.Parallel()
		s := shellPeer(`exec sleep 61.7272`)
		s.StartTimeout = 50 * time.Millisecond
		f := &fakeTB{TB: t}
		f.run(func(f *fakeTB) { Start(f, s) })
		if !strings.Contains(f.fatal, "not ready") || !strings.Contains(f.fatal, "no up in the log") {
			t.Fatalf("fatal = %q, want the last readiness error", f.fatal)
		}
	})
	t.Run("default readiness dials", func(t *testing.T) {
		t.Parallel()
		s := shellPeer(`exec sleep 61.7373`)
		s.Ready, s.StartTimeout = nil, 50*time.Millisecond
		f := &fakeTB{TB: t}
		f.run(func(f *fakeTB) { Start(f, s) })
		if !strings.Contains(f.fatal, "connection refused") {
			t.Fatalf("fatal = %q, want the refused dial", f.fatal)
		}
	})
}

// fakeTB records what a helper reports; Fatalf and Skipf end the goroutine
// like the real ones.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex // guards fatal, skip, logged
	fatal  string
	skip   string
	logged string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.Fatalf("%s", fmt.Sprint(args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skip = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	f.logged = fmt.Sprintf(format, args...)
	f.mu.Unlock()
}

// run calls fn with f on a goroutine of its own, as Goexit requires.
func (f *fakeTB) run(fn func(*fakeTB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
}

func TestClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	c.Add(90 * time.Second)
	if got := c.Now(); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("after Add: %v", got)
	}
	c.Add(-time.Hour)
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set: %v", got)
	}
	if (&Clock{}).Now() != (time.Time{}) {
		t.Fatal("a zero Clock does not read the zero time")
	}
}
