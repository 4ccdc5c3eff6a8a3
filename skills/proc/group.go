package proc

import "errors"

// Group identifies the process group a tool ran in, in a way that outlives
// the agent: a pid can be reused, a pid, its start time and the boot
// together cannot.
type Group struct {
	// Pgid is the id of the group, the pid of its first process.
	Pgid int
	// StartTicks is when that process started, in clock ticks since boot.
	StartTicks uint64
	// BootID is the kernel's boot id (/proc/sys/kernel/random/boot_id).
	BootID string
}

// ErrGroupReused means a process group's id now names processes that are
// not the group's: nothing was killed.
var ErrGroupReused = errors.New("process group id reused")
