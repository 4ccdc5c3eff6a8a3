package builtin_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/internal/opstest"
	"github.com/evoclaw/evoclaw/skills/internal/proctest"
	"github.com/evoclaw/evoclaw/skills/proc"
)

func TestLocalContract(t *testing.T) {
	opstest.Run(t, func(t *testing.T) builtin.Options {
		return builtin.Options{Dir: t.TempDir()}
	})
}

// TestBashGigabyte pushes 1 GB through the bash tool's stdout: the tool
// must keep only its cap, count the rest, and not hold the gigabyte.
func TestBashGigabyte(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GB through a pipe")
	}
	const total = 1_000_000_000
	tool, err := builtin.NewBash(builtin.Options{Dir: t.TempDir(), MaxOutput: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := tool.Run(context.Background(), map[string]any{"command": "head -c 1000000000 /dev/zero"})
	runtime.ReadMemStats(&after)
	if out.ErrorType() != "" || out.ResultBytes != total || !out.Truncated {
		t.Fatalf("1 GB run: error %q, ResultBytes %d, Truncated %v", out.ErrorType(), out.ResultBytes, out.Truncated)
	}
	if n := len(out.Text()); n > 4096+100 {
		t.Fatalf("kept %d bytes of output, cap 4096", n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Fatalf("allocated %d MiB while discarding 1 GB of output", alloc>>20)
	}
}

// TestBashTimeoutKillsGroup checks that a timed-out command's background
// jobs die with it.
func TestBashTimeoutKillsGroup(t *testing.T) {
	tool, err := builtin.NewBash(builtin.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out := tool.Run(context.Background(), map[string]any{"command": "sleep 63.4242 & sleep 63.4243", "timeout_ms": int64(300)})
	if out.ErrorType() != wire.ErrTimeout || out.ExitCode == nil || *out.ExitCode != -1 {
		t.Fatalf("bash timeout = %+v", out)
	}
	proctest.WaitGone(t, "sleep", "63.4242")
	proctest.WaitGone(t, "sleep", "63.4243")
}

// TestBashStreams checks that the bash tool passes its output to the
// OutputFunc of its context while keeping its result unchanged.
func TestBashStreams(t *testing.T) {
	tool, err := builtin.NewBash(builtin.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen strings.Builder
	ctx := skills.WithOutput(context.Background(), func(s proc.Stream, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		seen.WriteString(string(s) + ":" + string(p))
	})
	out := tool.Run(ctx, map[string]any{"command": "echo hello; sleep 0.1; echo world"})
	if out.ErrorType() != "" || out.Text() != "hello\nworld\n" {
		t.Fatalf("bash output %q error %q", out.Text(), out.ErrorType())
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen.String(); got != "stdout:hello\nstdout:world\n" {
		t.Fatalf("streamed %q", got)
	}
}
