package proc

import (
	"fmt"
	"strings"
)

// Death is how a child of the binary that was bounded by BoundSelf (an
// audit query's, a git call's) ended without giving its answer.
type Death int

const (
	// DiedOther: it exited or was killed for another reason.
	DiedOther Death = iota
	// DiedOfMemory: it hit its memory bound (what it printed says so).
	DiedOfMemory
	// DiedKilled: SIGKILL, not by Run (it did not time out): most likely
	// the kernel's out-of-memory killer, which takes such a child first.
	DiedKilled
)

// ChildDeath tells how the child of res ended when it gave no answer, and
// says it in a few words for an error message: "exit status 2: <the first
// line of its stderr>", "killed by SIGSEGV".
func ChildDeath(res *Result) (Death, string) {
	msg := strings.TrimSpace(string(res.Stderr))
	how := fmt.Sprintf("exit status %d", res.ExitCode)
	if res.Signal != "" {
		how = "killed by " + res.Signal
	}
	if line, _, _ := strings.Cut(msg, "\n"); line != "" {
		how += ": " + line
	}
	switch {
	case outOfMemory(msg):
		return DiedOfMemory, how
	case res.Signal == "SIGKILL" && !res.TimedOut:
		return DiedKilled, how
	}
	return DiedOther, how
}

// outOfMemory tells a bounded child that hit its bound by what it printed:
// the Go runtime's fatal error, SQLite's, a thread it could not start (a
// thread's stack is data too), or in a binary built with -race the race
// detector's memory.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "pthread_create failed", "failed to create new OS thread",
		"ThreadSanitizer failed to allocate"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}
