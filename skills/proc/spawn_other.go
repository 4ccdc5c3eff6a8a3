//go:build unix && !linux

package proc

import "os/exec"

// startTied starts cmd. Only Linux has a parent-death signal; elsewhere a
// tool outlives an agent that is killed.
func startTied(cmd *exec.Cmd) error { return cmd.Start() }
