//go:build unix && !linux

package proc

import "os/exec"

// StartTied starts cmd. Only Linux has a parent-death signal; elsewhere a
// tool outlives an agent that is killed.
func StartTied(cmd *exec.Cmd) error { return cmd.Start() }
