package builtin

import (
	"errors"
	"fmt"
	"os"
)

// MinFreeBytes is how much free space the file tools leave on the
// workspace's file system: a write that would leave less is refused
// (ErrDiskLow), so that a model writing file after file cannot fill the
// disk that the agent, its audit trail and the rest of the board need.
// bash, which writes through the shell, is not held to it.
const MinFreeBytes = 64 << 20

// ErrDiskLow refuses a write that would leave less than MinFreeBytes free.
var ErrDiskLow = errors.New("the workspace's file system is nearly full")

// freeBytes reports the bytes an unprivileged writer may still use on the
// file system holding f; a variable so tests can make a disk look full.
var freeBytes = fileSystemFree

// checkRoom refuses writing n more bytes to f when that would leave less
// than MinFreeBytes free. A file system whose free space cannot be read
// is not refused.
func checkRoom(f *os.File, n int) error {
	free, err := freeBytes(f)
	if err != nil {
		return nil
	}
	if need := uint64(n) + MinFreeBytes; free < need {
		return fmt.Errorf("%w: %d bytes free, and this write of %d bytes would leave less than the %d MiB the file tools keep free for the agent and its audit trail",
			ErrDiskLow, free, n, MinFreeBytes>>20)
	}
	return nil
}
