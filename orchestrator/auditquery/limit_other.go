//go:build !linux

package auditquery

// limitSelf bounds nothing here: only Linux has the data-size limit the
// query child relies on. The child still keeps a statement's memory out
// of the node.
func limitSelf(memory int64) error { return nil }

// DefaultMemory is DefaultMemoryBytes.
func DefaultMemory() int64 { return DefaultMemoryBytes }
