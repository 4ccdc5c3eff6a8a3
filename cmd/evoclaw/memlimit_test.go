package main

import (
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	const meminfo = "MemTotal:         512000 kB\nMemFree:          100000 kB\n"
	groups := map[string]string{
		"/system.slice/evoclaw.service": "104857600\n", // MemoryMax=100M
		"/user.slice":                   "max\n",
	}
	read := func(group string) []byte { return []byte(groups[group]) }
	for _, tt := range []struct {
		name, meminfo, cgroup string
		want                  int64
	}{
		{"a board's memory", meminfo, "", 512000 << 10 / 4},
		{"a unit's MemoryMax, less than the board's", meminfo, "0::/system.slice/evoclaw.service\n", 104857600 / 4},
		{"a group without a bound", meminfo, "0::/user.slice\n", 512000 << 10 / 4},
		{"cgroup v1 lines only", meminfo, "12:memory:/x\n", 512000 << 10 / 4},
		{"no meminfo, a bounded group", "", "0::/system.slice/evoclaw.service\n", 104857600 / 4},
		{"nothing known", "", "", 0},
		{"garbage", "MemTotal: lots kB\n", "0::/nowhere\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := memoryLimit([]byte(tt.meminfo), []byte(tt.cgroup), read); got != tt.want {
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
	want := memoryLimit(readFile("/proc/meminfo"), readFile("/proc/self/cgroup"), func(group string) []byte {
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
