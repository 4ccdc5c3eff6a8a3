//go:build !unix

package sqlite

import "os"

// lockFile: no advisory lock on this platform (see lock_unix.go).
func lockFile(string) (*os.File, bool, error) { return nil, true, nil }

// lockOpen: no advisory lock on this platform.
func lockOpen(*os.File) (bool, error) { return true, nil }
