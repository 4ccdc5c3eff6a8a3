//go:build !linux

package proc

import (
	"errors"
	"fmt"
)

// Group identifies the process group a tool ran in; see the Linux build.
type Group struct {
	Pgid       int
	StartTicks uint64
	BootID     string
}

// ErrGroupReused means a process group's id now names processes that are
// not the group's: nothing was killed.
var ErrGroupReused = errors.New("process group id reused")

// GroupOf is not supported on this platform.
func GroupOf(pid int) (Group, error) {
	return Group{}, fmt.Errorf("group of %d: %w", pid, errors.ErrUnsupported)
}

// KillLeftovers is not supported on this platform: it finds nothing.
func (g Group) KillLeftovers() (int, error) { return 0, errors.ErrUnsupported }
