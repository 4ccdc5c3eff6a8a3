//go:build !unix

package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
)

// freeBytes cannot tell the free space here: -1, and the backup is not
// refused ahead (a full disk still fails it cleanly).
func freeBytes(string) (int64, error) { return -1, nil }

// processAlive cannot tell here: a temporary file is left for the user.
func processAlive(int) bool { return true }

// openOwnAt opens name in dir (nil: name is a path) for reading when it is
// a regular file (a directory when wantDir) and not a symbolic link, else
// ErrNotOwnFile. Without openat and O_NOFOLLOW the check precedes the
// open.
func openOwnAt(dir *os.File, name string, wantDir bool) (*os.File, error) {
	path := name
	if dir != nil {
		path = filepath.Join(dir.Name(), name)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() != wantDir || (!wantDir && !fi.Mode().IsRegular()) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotOwnFile)
	}
	return os.Open(path)
}
