//go:build linux

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

func TestRunExit(t *testing.T) {
	tests := []struct {
		name   string
		script string
		exit   int
		signal string
		stdout string
		stderr string
	}{
		{name: "success", script: "echo out; echo err >&2", exit: 0, stdout: "out\n", stderr: "err\n"},
		{name: "non-zero exit is a result", script: "echo broken >&2; exit 3", exit: 3, stderr: "broken\n"},
		{name: "exit 255", script: "exit 255", exit: 255},
		{name: "killed by SIGKILL", script: "kill -KILL $$", exit: -1, signal: "SIGKILL"},
		{name: "crashed with SIGSEGV", script: "kill -SEGV $$", exit: -1, signal: "SIGSEGV"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(t.Context(), sh(tt.script, 10*time.Second))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.exit || res.Signal != tt.signal || res.TimedOut {
				t.Errorf("exit %d signal %q timedOut %v, want exit %d signal %q",
					res.ExitCode, res.Signal, res.TimedOut, tt.exit, tt.signal)
			}
			if string(res.Stdout) != tt.stdout || string(res.Stderr) != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", res.Stdout, res.Stderr, tt.stdout, tt.stderr)
			}
			if res.StdoutBytes != int64(len(tt.stdout)) || res.Truncated {
				t.Errorf("StdoutBytes %d Truncated %v", res.StdoutBytes, res.Truncated)
			}
		})
	}
}

func TestRunStdin(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, more than a pipe holds
	tests := []struct {
		name   string
		script string
		stdin  []byte
		want   []byte
	}{
		{name: "delivered", script: "cat", stdin: []byte(`{"zone":1}` + "\n"), want: []byte(`{"zone":1}` + "\n")},
		{name: "larger than the pipe buffer", script: "cat", stdin: big, want: big},
		{name: "nil stdin is the null device", script: "cat; echo done", stdin: nil, want: []byte("done\n")},
		{name: "empty stdin is closed at once", script: "cat; echo done", stdin: []byte{}, want: []byte("done\n")},
		// The child exits without reading: the writer gets EPIPE, which is
		// not an error of the run.
		{name: "ignored by the child", script: "echo ignored", stdin: big, want: []byte("ignored\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sh(tt.script, 10*time.Second)
			s.Stdin = tt.stdin
			s.MaxOutput = 2 << 20
			res, err := Run(t.Context(), s)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != 0 || !bytes.Equal(res.Stdout, tt.want) {
				t.Errorf("exit %d, stdout %d bytes, want %d bytes", res.ExitCode, len(res.Stdout), len(tt.want))
			}
		})
	}
}

func TestRunEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("EVOCLAW_TEST_SECRET", "must-not-leak")
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{name: "nil is minimal", env: nil, want: MinimalEnv()},
		{name: "empty is empty", env: []string{}, want: nil},
		{name: "given is exact", env: []string{"A=1", "B=2"}, want: []string{"A=1", "B=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(t.Context(), Spec{Path: "/usr/bin/env", Env: tt.env, Dir: dir, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := strings.Fields(string(res.Stdout))
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("env = %q, want %q", got, want)
			}
		})
	}
	res, err := Run(t.Context(), Spec{Path: "pwd", Dir: dir, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Run pwd: %v", err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != dir {
		t.Errorf("pwd = %q, want %q", got, dir)
	}
}

// TestRunTimeoutKillsGroup checks that the deadline kills the child and the
// grandchild it started, which holds stdout open.
func TestRunTimeoutKillsGroup(t *testing.T) {
	s := sh("sleep 100 & echo $!; sleep 100", 200*time.Millisecond)
	s.WaitDelay = time.Minute // the group kill, not the pipe grace, must end the run
	begin := time.Now()
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Fatalf("Run took %v", took)
	}
	if !res.TimedOut || res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Errorf("TimedOut %v exit %d signal %q, want true -1 SIGKILL", res.TimedOut, res.ExitCode, res.Signal)
	}
	if res.Elapsed < s.Timeout {
		t.Errorf("Elapsed %v is shorter than the timeout %v", res.Elapsed, s.Timeout)
	}
	grandchild := firstPID(t, res.Stdout)
	testenv.Eventually(t, 5*time.Second, func() bool { return gone(grandchild) }, "grandchild to die")
}

// TestRunKillsLeftoversAfterExit checks that a background job of a tool that
// exited normally does not outlive the call nor keep Run waiting.
func TestRunKillsLeftoversAfterExit(t *testing.T) {
	s := sh("sleep 100 & echo $!; exit 0", time.Minute)
	s.WaitDelay = time.Minute
	begin := time.Now()
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Fatalf("Run took %v: the leftover kept the pipe open", took)
	}
	if res.ExitCode != 0 || res.TimedOut {
		t.Errorf("exit %d TimedOut %v, want 0 false", res.ExitCode, res.TimedOut)
	}
	leftover := firstPID(t, res.Stdout)
	testenv.Eventually(t, 5*time.Second, func() bool { return gone(leftover) }, "leftover to die")
}

// TestRunEscapedDescendant checks that a descendant in a session of its own,
// which the group kill cannot reach, holds Run no longer than WaitDelay.
func TestRunEscapedDescendant(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("setsid not installed")
	}
	s := Spec{Path: "/bin/sh", Args: []string{"-c", setsid + " sleep 100 & echo $!"}, Timeout: time.Minute, WaitDelay: 100 * time.Millisecond}
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	escaped := firstPID(t, res.Stdout)
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	if res.ExitCode != 0 {
		t.Errorf("exit %d, want 0", res.ExitCode)
	}
}

func TestRunContext(t *testing.T) {
	t.Run("already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Run(ctx, sh("exit 0", time.Minute))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("cancelled while running", func(t *testing.T) {
		ready := filepath.Join(t.TempDir(), "ready")
		errStop := errors.New("agent stopping")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		s := Spec{Path: "/bin/sh", Args: []string{"-c", `sleep 100 & echo $!; : > "$1"; sleep 100`, "sh", ready}, Timeout: time.Minute}
		type outcome struct {
			res Result
			err error
		}
		ran := make(chan outcome, 1)
		go func() {
			res, err := Run(ctx, s)
			ran <- outcome{res, err}
		}()
		// Cancel once the child is running; if it never shows up, the
		// deferred cancel ends Run rather than a hang.
		testenv.Eventually(t, 10*time.Second, func() bool {
			_, err := os.Stat(ready)
			return err == nil
		}, "the child to start")
		cancel(errStop)
		o := <-ran
		res, err := o.res, o.err
		if !errors.Is(err, errStop) {
			t.Fatalf("err = %v, want the cancel cause", err)
		}
		if res.TimedOut || res.Signal != "SIGKILL" {
			t.Errorf("TimedOut %v signal %q, want false SIGKILL", res.TimedOut, res.Signal)
		}
		grandchild := firstPID(t, res.Stdout)
		testenv.Eventually(t, 5*time.Second, func() bool { return gone(grandchild) }, "grandchild to die")
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, sh("sleep 100", time.Minute))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

// TestRunHugeOutput checks that output beyond the cap is counted and
// dropped, not held: 200 MB through stdout must not cost 200 MB of memory.
func TestRunHugeOutput(t *testing.T) {
	const total = 200_000_000
	s := sh("head -c 200000000 /dev/zero; head -c 3000000 /dev/zero >&2", time.Minute)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := Run(t.Context(), s)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.StdoutBytes != total || len(res.Stdout) != DefaultMaxOutput {
		t.Errorf("StdoutBytes %d len(Stdout) %d, want %d %d", res.StdoutBytes, len(res.Stdout), total, DefaultMaxOutput)
	}
	if res.StderrBytes != 3_000_000 || len(res.Stderr) != DefaultMaxOutput {
		t.Errorf("StderrBytes %d len(Stderr) %d", res.StderrBytes, len(res.Stderr))
	}
	if !res.Truncated || res.ExitCode != 0 {
		t.Errorf("Truncated %v exit %d, want true 0", res.Truncated, res.ExitCode)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("Run allocated %d MiB for a capped 200 MB output", alloc>>20)
	}

	s.MaxOutput = 10
	res, err = Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Stdout) != 10 || len(res.Stderr) != 10 || res.StdoutBytes != total {
		t.Errorf("MaxOutput 10: len %d/%d StdoutBytes %d", len(res.Stdout), len(res.Stderr), res.StdoutBytes)
	}
}

func TestRunStartErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noExec := write("noexec", "#!/bin/sh\necho hi\n", 0o644)
	noInterp := write("nointerp", "#!/nonexistent/interpreter\n", 0o755)
	tests := []struct {
		name string
		spec Spec
		want error
		text string
	}{
		{name: "missing file", spec: Spec{Path: filepath.Join(dir, "missing")}, want: ErrNotFound},
		{name: "not in PATH", spec: Spec{Path: "evoclaw-no-such-binary"}, want: ErrNotFound},
		{name: "missing interpreter", spec: Spec{Path: noInterp}, want: ErrNotFound, text: "interpreter"},
		{name: "not executable", spec: Spec{Path: noExec}, want: ErrPermission},
		{name: "directory", spec: Spec{Path: dir}, want: ErrPermission},
		{name: "missing working directory", spec: Spec{Path: "/bin/true", Dir: filepath.Join(dir, "nodir")}, want: os.ErrNotExist, text: "working directory"},
		{name: "no path", spec: Spec{}, want: ErrInvalidSpec},
		{name: "no timeout", spec: Spec{Path: "/bin/true", Timeout: -1}, want: ErrInvalidSpec},
		{name: "negative max output", spec: Spec{Path: "/bin/true", MaxOutput: -1}, want: ErrInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.spec.Timeout == 0 && tt.spec.Path != "" {
				tt.spec.Timeout = 10 * time.Second
			}
			_, err := Run(t.Context(), tt.spec)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("err = %q, want it to mention %q", err, tt.text)
			}
			if tt.want == os.ErrNotExist && errors.Is(err, ErrNotFound) {
				t.Errorf("a missing working directory is reported as a missing binary: %v", err)
			}
		})
	}
}

// TestRunOnOutput checks that OnOutput sees every byte of each stream in
// order, beyond the cap too, while memory stays bounded.
func TestRunOnOutput(t *testing.T) {
	var mu sync.Mutex
	seen := map[Stream]*bytes.Buffer{Stdout: {}, Stderr: {}}
	var counted int64
	s := sh("for i in 1 2 3; do echo out$i; echo err$i >&2; done; head -c 50000000 /dev/zero", time.Minute)
	s.MaxOutput = 100
	s.OnOutput = func(st Stream, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		counted += int64(len(p))
		if b := seen[st]; b.Len() < 64 {
			b.Write(p[:min(len(p), 64-b.Len())])
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := Run(t.Context(), s)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if counted != res.StdoutBytes+res.StderrBytes || res.StdoutBytes != 50_000_000+15 {
		t.Fatalf("OnOutput saw %d bytes, the child wrote %d+%d", counted, res.StdoutBytes, res.StderrBytes)
	}
	if got := seen[Stdout].String(); !strings.HasPrefix(got, "out1\nout2\nout3\n") {
		t.Errorf("stdout seen %q", got)
	}
	if got := seen[Stderr].String(); got != "err1\nerr2\nerr3\n" {
		t.Errorf("stderr seen %q", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("Run with OnOutput allocated %d MiB for 50 MB of output", alloc>>20)
	}
}
