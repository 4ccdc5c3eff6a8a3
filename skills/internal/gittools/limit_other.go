//go:build !linux

package gittools

// limitSelf bounds nothing here: only Linux has the data-size limit a git
// child relies on. The child still keeps a call's memory out of the agent.
func limitSelf(memory int64) error { return nil }

// DefaultMemory is DefaultMemoryBytes.
func DefaultMemory() int64 { return DefaultMemoryBytes }
