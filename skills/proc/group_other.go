//go:build !linux

package proc

import (
	"errors"
	"fmt"
)

// GroupOf is not supported on this platform.
func GroupOf(pid int) (Group, error) {
	return Group{}, fmt.Errorf("group of %d: %w", pid, errors.ErrUnsupported)
}

// KillLeftovers is not supported on this platform: it finds nothing.
func (g Group) KillLeftovers() (int, error) { return 0, errors.ErrUnsupported }
