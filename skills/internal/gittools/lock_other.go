//go:build !unix

package gittools

import "os"

// lockFile and unlockFile do nothing off Unix: the agent runs on Linux,
// and these builds only need to compile.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
