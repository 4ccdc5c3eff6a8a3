//go:build !linux

package sqlite

// walVFSName names the writer's VFS on Linux (walvfs.go).
const walVFSName = "evoclaw-walbuf"

// registerWALVFS reports that the writer's VFS is not available: it is
// built for Linux alone, where its delegation to the unix VFS is checked.
// The writer uses SQLite's default VFS.
func registerWALVFS() bool { return false }
