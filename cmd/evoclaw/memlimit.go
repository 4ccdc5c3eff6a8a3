package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
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
// memoryShare is the part of that memory the limit is.
const memoryShare = 4

// softMemoryLimit sets the limit unless GOMEMLIMIT is set, and returns it
// (0 when it set none: the environment's, or memory it could not read).
func softMemoryLimit() int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	limit := memoryLimit(readFile("/proc/meminfo"), readFile("/proc/self/cgroup"), func(group string) []byte {
		return readFile(filepath.Join("/sys/fs/cgroup", filepath.Clean("/"+group), "memory.max"))
	})
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return limit
}

// memoryLimit is memoryShare's part of the smaller of MemTotal (meminfo)
// and the memory.max of this process's cgroup v2 group (cgroup names the
// group; groupMax reads its memory.max); 0 when neither is known.
func memoryLimit(meminfo, cgroup []byte, groupMax func(group string) []byte) int64 {
	var most int64
	for line := range bytes.Lines(meminfo) {
		if v, ok := bytes.CutPrefix(line, []byte("MemTotal:")); ok {
			if f := bytes.Fields(v); len(f) > 0 {
				if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil && kb > 0 && kb < 1<<50 {
					most = kb << 10
				}
			}
		}
	}
	for line := range bytes.Lines(cgroup) {
		// cgroup v2: "0::/system.slice/evoclaw.service"
		group, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("0::"))
		if !ok {
			continue
		}
		bound, err := strconv.ParseInt(string(bytes.TrimSpace(groupMax(string(group)))), 10, 64)
		if err == nil && bound > 0 && (most == 0 || bound < most) {
			most = bound
		}
	}
	return most / memoryShare
}

// readFile is the file's contents, or nothing.
func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}
