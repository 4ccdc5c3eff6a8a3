//go:build !unix

package testenv

import (
	"os"
	"syscall"
)

// ownGroup leaves a peer in the test's process group where groups are not
// Unix ones.
func ownGroup() *syscall.SysProcAttr { return nil }

// killGroup kills p alone.
func killGroup(p *os.Process) { _ = p.Kill() }
