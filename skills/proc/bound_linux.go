package proc

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// childNice is the scheduling priority Yield sets: below a node's, so a
// child that runs for its whole time bound takes the CPU the node's chats
// and tool calls leave.
const childNice = 10

// BoundSelf bounds this process, a child of the binary that runs work the
// node must survive (an audit statement, a git call): at most memory
// bytes of data mappings beyond those it holds now (RLIMIT_DATA: the Go
// heap, thread stacks, what a C library maps), and Yield. Past the bound
// an allocation fails and the process ends ("out of memory" on stderr),
// not its parent. The collector is also told to work harder as the heap
// nears the bound, instead of the heap growing into it. memory <= 0:
// Yield only.
func BoundSelf(memory int64) error {
	Yield()
	if memory <= 0 {
		return nil
	}
	held, err := procKB("/proc/self/status", "VmData:")
	if err != nil {
		return err
	}
	lim := uint64(held<<10 + memory)
	if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
		return fmt.Errorf("limit data size: %w", err)
	}
	debug.SetMemoryLimit(memory / 2)
	return nil
}

// Yield lowers this process's priority for every thread (nice 10) and
// puts it first in line for the kernel's out-of-memory killer
// (oom_score_adj 1000), ahead of the node beside it. Both are courtesies:
// without /proc they stay as they are, and neither needs a privilege.
func Yield() {
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			// New threads inherit the priority of the thread that makes them.
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, childNice)
		}
	}
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
}

// ChildMemory is most, or a quarter of the machine's memory when that is
// less (a board with 512 MB gives a child 128 MB).
func ChildMemory(most int64) int64 {
	if total, err := procKB("/proc/meminfo", "MemTotal:"); err == nil && total > 0 {
		return min(most, total<<10/4)
	}
	return most
}

// procKB reads the number of a "Key: N kB" line of a /proc file.
func procKB(path, key string) (int64, error) {
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
