//go:build !linux

package proc

// BoundSelf bounds nothing here: only Linux has the data-size limit the
// children of the binary rely on. A child still keeps its work's memory
// out of its parent.
func BoundSelf(memory int64) error { return nil }

// Yield does nothing here: the priority and the out-of-memory killer's
// order it sets are Linux's.
func Yield() {}

// ChildMemory is most.
func ChildMemory(most int64) int64 { return most }
