package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// profileEnv names a file prefix: when set, every evoclaw command writes a
// CPU profile of its whole run to PREFIX.COMMAND.PID.prof. Children inherit
// the environment, so `EVOCLAW_CPUPROFILE=p evoclaw bench` profiles both
// the orchestrator's and the edge agent's sides of a round trip.
const profileEnv = "EVOCLAW_CPUPROFILE"

// traceEnv names a file prefix the same way for an execution trace of the
// whole run (PREFIX.COMMAND.PID.trace): where goroutines wait (scheduler,
// syscalls, channels, locks), which a CPU profile does not show. Read it
// with `go tool trace`, e.g. `go tool trace -pprof=sync FILE`.
const traceEnv = "EVOCLAW_TRACE"

// memProfileEnv names a file prefix the same way for a heap profile
// written when the command ends (PREFIX.COMMAND.PID.heap): what the run
// allocated, by call site (`go tool pprof -sample_index=alloc_space`).
const memProfileEnv = "EVOCLAW_MEMPROFILE"

// startProfile starts the CPU profile, the execution trace and the heap
// profile asked for by profileEnv, traceEnv and memProfileEnv, if any, and
// returns the function that stops them and closes their files.
func startProfile(command string, stderr io.Writer) func() {
	stopCPU := startOutput(profileEnv, "prof", command, stderr, "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
	stopTrace := startOutput(traceEnv, "trace", command, stderr, "execution trace", trace.Start, trace.Stop)
	var heap io.Writer
	stopHeap := startOutput(memProfileEnv, "heap", command, stderr, "heap profile", func(w io.Writer) error {
		heap = w
		return nil
	}, func() {
		if err := pprof.Lookup("allocs").WriteTo(heap, 0); err != nil {
			fmt.Fprintf(stderr, "evoclaw: heap profile: %v\n", err)
		}
	})
	return func() {
		stopHeap()
		stopTrace()
		stopCPU()
	}
}

// startOutput opens PREFIX.COMMAND.PID.EXT for the prefix in env (none:
// nothing to do), starts the recorder on it and returns what stops it.
// Failures are reported on stderr as what; the command runs regardless.
func startOutput(env, ext, command string, stderr io.Writer, what string, start func(io.Writer) error, stop func()) func() {
	prefix := os.Getenv(env)
	if prefix == "" {
		return func() {}
	}
	path := fmt.Sprintf("%s.%s.%d.%s", prefix, command, os.Getpid(), ext)
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "evoclaw: %s: %v\n", what, err)
		return func() {}
	}
	if err := start(f); err != nil {
		fmt.Fprintf(stderr, "evoclaw: %s: %v\n", what, err)
		f.Close()
		return func() {}
	}
	return func() {
		stop()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "evoclaw: %s: %v\n", what, err)
		}
	}
}
