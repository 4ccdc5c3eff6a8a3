//go:build !unix

package sqlite

// freeBytes cannot tell the free space here: -1, and the backup is not
// refused ahead (a full disk still fails it cleanly).
func freeBytes(string) (int64, error) { return -1, nil }

// processAlive cannot tell here: a temporary file is left for the user.
func processAlive(int) bool { return true }
