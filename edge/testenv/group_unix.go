//go:build unix

package testenv

import (
	"os"
	"syscall"
)

// ownGroup puts a peer in a process group of its own, so that killGroup
// also ends the children it forked (sshd's per-connection processes).
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup sends SIGKILL to p's process group.
func killGroup(p *os.Process) {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		_ = p.Kill()
	}
}
