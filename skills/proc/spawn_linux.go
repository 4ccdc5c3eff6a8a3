//go:build linux

package proc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// The kernel sends a child its parent-death signal when the thread that
// forked it exits, not the process: Go runs os/exec from whatever OS thread
// the goroutine is on, and retires threads, which would kill a tool at a
// random moment. So every child is forked from one thread that is locked
// to a goroutine that never returns: that thread ends only with the
// process, and then every child gets SIGKILL, however the agent died.

// spawner is the thread children are forked from; it starts on first use
// and lives as long as the process (it owns no resource to release).
var spawner struct {
	once sync.Once
	reqs chan spawn // unbuffered: a start waits for the thread
}

// spawn is one child to start and where to say how it went.
type spawn struct {
	cmd  *exec.Cmd
	done chan error // buffered (1): the thread never waits on it
}

// StartTied starts cmd so that it gets SIGKILL when this process ends,
// however it ends. Run starts every tool with it; a caller that runs a
// long-lived child of its own (a stdio MCP server) uses it too.
func StartTied(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawn)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not be reused nor retired
			for s := range spawner.reqs {
				s.done <- s.cmd.Start()
			}
		}()
	})
	s := spawn{cmd: cmd, done: make(chan error, 1)}
	spawner.reqs <- s
	return <-s.done
}
