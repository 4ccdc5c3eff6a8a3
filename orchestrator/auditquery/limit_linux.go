package auditquery

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// childNice is the scheduling priority of a process that runs audit
// statements (a query child, `evoclaw audit sql`): below the node's, so a
// statement that runs for its whole time bound takes the CPU the node's
// chats and tool calls leave.
const childNice = 10

// limitSelf bounds this process (a query child): at most memory bytes of
// data mappings beyond those it holds now (RLIMIT_DATA: the heap, and the
// memory the SQLite library maps), a lower priority for every thread, and
// the first place in the kernel's out-of-memory killer's line.
// Past the bound an allocation fails: SQLite answers SQLITE_NOMEM, the Go
// runtime ends the process; either way only the child.
func limitSelf(memory int64) error {
	Yield()
	if memory <= 0 {
		return nil
	}
	held, err := procStatusKB("/proc/self/status", "VmData:")
	if err != nil {
		return err
	}
	lim := uint64(held<<10 + memory)
	if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
		return fmt.Errorf("limit data size: %w", err)
	}
	// The collector works harder as the heap nears the bound, instead of
	// the heap growing into it.
	debug.SetMemoryLimit(memory / 2)
	return nil
}

// Yield lowers this process's priority for every thread (nice 10) and
// puts it first in line for the kernel's out-of-memory killer
// (oom_score_adj 1000): a process that runs an audit statement yields to
// the node beside it. Both are courtesies: without /proc they stay as
// they are, and neither needs a privilege.
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

// DefaultMemory is DefaultMemoryBytes, or a quarter of the machine's
// memory when that is less (a board with 512 MB gives a query 128 MB).
func DefaultMemory() int64 {
	total, err := procStatusKB("/proc/meminfo", "MemTotal:")
	if err != nil || total <= 0 {
		return DefaultMemoryBytes
	}
	return min(DefaultMemoryBytes, total<<10/4)
}

// procStatusKB reads a "Key: N kB" line of a /proc file.
func procStatusKB(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(key)); ok {
			f := bytes.Fields(v)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(string(f[0]), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s", key, path)
}
