package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	skillproc "github.com/evoclaw/evoclaw/skills/proc"
)

// The long-running roles (serve and edge) set the collector a soft memory
// limit, a quarter of the memory they may use: the machine's, or their
// control group's when that is less (a systemd unit's MemoryMax). With the
// collector's goal alone the heap may grow to twice what is live before a
// collection, so a burst of garbage (many large answers, a flood of
// reports) took a node's memory to several times its working set; near the
// limit the collector runs sooner instead. It is soft: a heap that truly
// needs more gets it, at the cost of more collections, never a crash. An
// operator's GOMEMLIMIT stands.
//
// memoryShare is the part of that memory the limit is, as a tool child's
// bound is a quarter of the machine's (skillproc.ChildMemory).
const memoryShare = 4

// softMemoryLimit sets the limit unless GOMEMLIMIT is set, and returns it
// (0 when it set none: the environment's, or memory it could not read).
func softMemoryLimit() int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	limit := memoryLimit(skillproc.ChildMemory, readFile("/proc/self/cgroup"), func(group string) []byte {
		return readFile(filepath.Join("/sys/fs/cgroup", filepath.Clean("/"+group), "memory.max"))
	})
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return limit
}

// memoryLimit is memoryShare's part of the smaller of the machine's memory
// and the memory.max of this process's cgroup v2 group (cgroup names the
// group; groupMax reads its memory.max); 0 when neither is known.
// machineShare is skillproc.ChildMemory: the least of its argument and a
// quarter of the machine's memory, its argument when that is not known.
func memoryLimit(machineShare func(most int64) int64, cgroup []byte, groupMax func(group string) []byte) int64 {
	most := int64(math.MaxInt64)
	for line := range bytes.Lines(cgroup) {
		// cgroup v2: "0::/system.slice/evoclaw.service"
		group, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("0::"))
		if !ok {
			continue
		}
		bound, err := strconv.ParseInt(string(bytes.TrimSpace(groupMax(string(group)))), 10, 64)
		if err == nil && bound > 0 {
			most = min(most, bound/memoryShare)
		}
	}
	if limit := machineShare(most); limit != math.MaxInt64 {
		return limit
	}
	return 0
}

// readFile is the file's contents, or nothing.
func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}
