//go:build !linux

package auditquery

// limitSelf bounds nothing here: only Linux has the data-size limit the
// query child relies on. The child still keeps a statement's memory out
// of the node.
func limitSelf(memory int64) error { return nil }

// Yield does nothing here: the priority and the out-of-memory killer's
// order it sets are Linux's.
func Yield() {}

// DefaultMemory is DefaultMemoryBytes.
func DefaultMemory() int64 { return DefaultMemoryBytes }
