package gittools

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// limitSelf bounds this process (a git child) to memory bytes of data
// mappings beyond those it holds now (RLIMIT_DATA): past it an allocation
// fails and the Go runtime ends the process, "out of memory" on stderr.
// It also lowers the child's priority and puts it first in the kernel's
// out-of-memory killer's line, ahead of the agent that started it.
func limitSelf(memory int64) error {
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, 10) // a courtesy; new threads inherit it
		}
	}
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	if memory <= 0 {
		return nil
	}
	held, err := kbOf("/proc/self/status", "VmData:")
	if err != nil {
		return err
	}
	lim := uint64(held<<10 + memory)
	if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
		return fmt.Errorf("limit data size: %w", err)
	}
	// The collector works harder as the heap nears the bound.
	debug.SetMemoryLimit(memory / 2)
	return nil
}

// DefaultMemory is DefaultMemoryBytes, or a quarter of the machine's
// memory when that is less (a board with 512 MB gives a git call 128 MB).
func DefaultMemory() int64 {
	if total, err := kbOf("/proc/meminfo", "MemTotal:"); err == nil && total > 0 {
		return min(DefaultMemoryBytes, total<<10/4)
	}
	return DefaultMemoryBytes
}

// kbOf reads the number of a "Key: N kB" line of a /proc file.
func kbOf(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
			if f := bytes.Fields(v); len(f) > 0 {
				return strconv.ParseInt(string(f[0]), 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s in %s", key, path)
}
