//go:build unix

package gittools

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile and unlockFile take and drop an exclusive flock, as go-billy's
// osfs does.
func lockFile(f *os.File) error   { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }
func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }
