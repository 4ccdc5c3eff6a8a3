package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
)

// startChild runs this binary with args and, added to ours, the environment
// variables env ("KEY=value"); its stderr goes to logw. It is ready when it
// prints a line containing "ready".
func startChild(name string, args []string, logw io.Writer, env ...string) (*child.Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	return child.Start(name, exe, args, child.Options{Stderr: logw, Env: env})
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
