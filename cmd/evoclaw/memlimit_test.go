package main

import (
	"path/filepath"
	"runtime/debug"
	"testing"

	skillproc "github.com/evoclaw/evoclaw/skills/proc"
)

func TestMemoryLimit(t *testing.T) {
	const board = 512000 << 10 // MemTotal of a 512 MB board
	groups := map[string]string{
		"/system.slice/evoclaw.service": "104857600\n", // MemoryMax=100M
		"/user.slice":                   "max\n",
		"/odd":                          "-5\n",
	}
	read := func(group string) []byte { return []byte(groups[group]) }
	// machine is proc.ChildMemory on a machine of total bytes (0: not known).
	machine := func(total int64) func(int64) int64 {
		return func(most int64) int64 {
			if total == 0 {
				return most
			}
			return min(most, total/4)
		}
	}
	for _, tt := range []struct {
		name   string
		total  int64
		cgroup string
		want   int64
	}{
		{"a board's memory", board, "", board / 4},
		{"a unit's MemoryMax, less than the board's", board, "0::/system.slice/evoclaw.service\n", 104857600 / 4},
		{"a group without a bound", board, "0::/user.slice\n", board / 4},
		{"a group with an odd bound", board, "0::/odd\n", board / 4},
		{"cgroup v1 lines only", board, "12:memory:/x\n", board / 4},
		{"no machine figure, a bounded group", 0, "0::/system.slice/evoclaw.service\n", 104857600 / 4},
		{"nothing known", 0, "", 0},
		{"garbage", 0, "0::/nowhere\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := memoryLimit(machine(tt.total), []byte(tt.cgroup), read); got != tt.want {
				t.Fatalf("memoryLimit = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestSoftMemoryLimit: the limit set is the one memoryLimit computes from
// this machine, and GOMEMLIMIT stands.
func TestSoftMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	want := memoryLimit(skillproc.ChildMemory, readFile("/proc/self/cgroup"), func(group string) []byte {
		return readFile(filepath.Join("/sys/fs/cgroup", filepath.Clean("/"+group), "memory.max"))
	})
	if got := softMemoryLimit(); got != want {
		t.Fatalf("softMemoryLimit = %d, want %d", got, want)
	}
	if want > 0 && debug.SetMemoryLimit(-1) != want {
		t.Fatalf("the runtime's limit is %d, want %d", debug.SetMemoryLimit(-1), want)
	}
	debug.SetMemoryLimit(before)
	t.Setenv("GOMEMLIMIT", "123MiB")
	if got := softMemoryLimit(); got != 0 || debug.SetMemoryLimit(-1) != before {
		t.Fatalf("with GOMEMLIMIT set: softMemoryLimit = %d, the runtime's limit %d; want both untouched", got, debug.SetMemoryLimit(-1))
	}
}
