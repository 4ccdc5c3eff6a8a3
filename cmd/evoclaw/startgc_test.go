package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
)

// Every process of the binary, `evoclaw version` as much as an edge agent,
// runs the package initialisation of every package linked in. Ours build
// what only one path needs (compiled patterns, tables) on first use: none
// of our packages may allocate more than a few small values at start-up.
func TestOwnPackagesInitCheaply(t *testing.T) {
	const (
		maxBytes  = 16 << 10
		maxAllocs = 128
	)
	cmd := exec.Command(evoclawtest.Binary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("evoclaw version: %v\n%s%s", err, out, stderr.String())
	}
	ours := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, D ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/evoclaw/evoclaw/") {
			continue
		}
		ours++
		b, errB := strconv.Atoi(f[7])
		a, errA := strconv.Atoi(f[9])
		if errB != nil || errA != nil || f[8] != "bytes," || f[10] != "allocs" {
			t.Fatalf("unexpected inittrace line %q", sc.Text())
		}
		if b > maxBytes || a > maxAllocs {
			t.Errorf("package %s allocates %d bytes in %d allocations at init, more than %d in %d: build it lazily (sync.OnceValue)", f[1], b, a, maxBytes, maxAllocs)
		}
	}
	if ours == 0 {
		t.Fatalf("no init lines of our packages in\n%s", stderr.String())
	}
}

// startupGC sets the start-up goal and restores the operator's, or leaves
// GOGC alone when the environment sets it.
func TestStartupGC(t *testing.T) {
	for _, gogc := range []string{"", "50"} {
		t.Run("GOGC="+gogc, func(t *testing.T) {
			t.Setenv("GOGC", gogc) // restored after the test
			if gogc == "" {
				os.Unsetenv("GOGC")
			}
			operator := debug.SetGCPercent(70) // what the runtime took from $GOGC, say
			defer debug.SetGCPercent(operator)
			want := startupGCPercent
			if gogc != "" {
				want = 70
			}
			ready := startupGC()
			if got := gcPercent(); got != want {
				t.Errorf("GOGC during start-up = %d, want %d", got, want)
			}
			ready()
			ready() // idempotent
			if got := gcPercent(); got != 70 {
				t.Errorf("GOGC once ready = %d, want 70", got)
			}
		})
	}
}

func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// idleMeter trims only a process that is idle and has something to give
// back.
func TestIdleMeter(t *testing.T) {
	var allocated uint64
	m := &idleMeter{allocs: func() uint64 { return allocated }}
	for i, step := range []struct {
		alloc uint64 // bytes allocated before the tick
		trim  bool
	}{
		{0, false},                          // nothing to give back
		{idleTrimMinGarbage / 2, false},     // idle, too little garbage yet
		{idleTrimMinGarbage / 2, true},      // idle, enough garbage since the last trim
		{10 << 10, false},                   // just trimmed
		{idleAllocBytes, false},             // busy
		{idleAllocBytes - 1, true},          // idle again, the busy tick's garbage is still there
		{2 * idleTrimMinGarbage, true},      // idle
		{idleAllocBytes + (1 << 20), false}, // busy
	} {
		allocated += step.alloc
		got := m.tick()
		if got != step.trim {
			t.Fatalf("step %d (%d bytes allocated): trim = %v, want %v", i, step.alloc, got, step.trim)
		}
		if got {
			m.trimmed()
		}
	}
	if real := newIdleMeter(); real.allocs() < real.last {
		t.Errorf("the runtime's allocation count went back: %d after %d", real.allocs(), real.last)
	}
}

// settle runs the collector's first cycles at once and then trims until
// its context ends; noMemProfile turns allocation sampling off.
func TestSettle(t *testing.T) {
	cycles := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := cycles()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // idleTrim returns at once
	settle(ctx)
	if got := cycles() - before; got < warmUpCycles {
		t.Errorf("settle ran %d collections, want at least %d", got, warmUpCycles)
	}

	rate := runtime.MemProfileRate
	defer func() { runtime.MemProfileRate = rate }()
	noMemProfile()
	if runtime.MemProfileRate != 0 {
		t.Errorf("MemProfileRate = %d after noMemProfile, want 0", runtime.MemProfileRate)
	}
}

// TestNoMemProfileUnlessAsked: the long-running roles stop sampling
// allocations, except when EVOCLAW_MEMPROFILE asks for a heap profile,
// which sampling makes.
func TestNoMemProfileUnlessAsked(t *testing.T) {
	rate := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = rate })
	for _, tc := range []struct {
		env  string
		want int
	}{
		{"", 0},
		{"/tmp/prof", 512 * 1024},
	} {
		runtime.MemProfileRate = 512 * 1024
		t.Setenv(memProfileEnv, tc.env)
		noMemProfile()
		if runtime.MemProfileRate != tc.want {
			t.Errorf("with %s=%q the sampling rate is %d, want %d", memProfileEnv, tc.env, runtime.MemProfileRate, tc.want)
		}
	}
}
