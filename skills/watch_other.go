//go:build !linux

package skills

// newWatch has no change notification to offer here: the catalog scans its
// directories on every lookup.
func newWatch([]string) dirWatch { return nil }
