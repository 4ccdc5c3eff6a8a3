//go:build !linux

package sqlite

// mountedReadOnly is false here: fsReadOnly's probe file finds a
// read-only file system.
func mountedReadOnly(string) bool { return false }
