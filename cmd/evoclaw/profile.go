package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// profileEnv names a file prefix: when set, every evoclaw command writes a
// CPU profile of its whole run to PREFIX.COMMAND.PID.prof. `evoclaw bench
// --cpuprofile PREFIX` sets it for the processes it starts, so that the
// orchestrator's and the edge agent's sides of a round trip are both profiled.
const profileEnv = "EVOCLAW_CPUPROFILE"

// startProfile starts the CPU profile asked for by profileEnv, if any, and
// returns the function that stops it and closes the file.
func startProfile(command string, stderr io.Writer) func() {
	prefix := os.Getenv(profileEnv)
	if prefix == "" {
		return func() {}
	}
	path := fmt.Sprintf("%s.%s.%d.prof", prefix, command, os.Getpid())
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(stderr, "evoclaw: cpu profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(stderr, "evoclaw: cpu profile:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(stderr, "evoclaw: cpu profile:", err)
		}
	}
}
