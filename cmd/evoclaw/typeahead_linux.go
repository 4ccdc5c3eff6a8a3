//go:build linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// pendingInput is how many bytes f holds that a read takes without
// waiting (a terminal's typed input, a pipe's contents); 0 when it cannot
// tell.
func pendingInput(f *os.File) int {
	n := 0
	if c, err := f.SyscallConn(); err == nil {
		_ = c.Control(func(fd uintptr) {
			if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
				n = v
			}
		})
	}
	return n
}

// flushTyped drops the input typed at terminal f and not read yet, and
// reports how many bytes of whole lines it dropped (a line still being
// typed is dropped too, but a terminal in line mode does not count it).
func flushTyped(f *os.File) int {
	n := pendingInput(f)
	dropped := 0
	if c, err := f.SyscallConn(); err == nil {
		_ = c.Control(func(fd uintptr) {
			if unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH) == nil {
				dropped = n
			}
		})
	}
	return dropped
}
