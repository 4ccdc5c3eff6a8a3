package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// TempSubdir is the directory inside a data directory that holds the
// temporary files of serve, edge and demo when TMPDIR is not set.
const TempSubdir = "tmp"

// useDataTempDir points the process's temporary files (os.CreateTemp,
// os.MkdirTemp, SQLite's spill files, the sandbox probe's scratch
// workspace) at dataDir/tmp unless TMPDIR is set, so that a node or an
// agent on a read-only root file system writes only to its data
// directory. It must run before the first database is opened: the SQLite
// library reads TMPDIR once, at its first use. Tool processes do not see
// TMPDIR (their environment is minimal; sandboxed ones get a private /tmp).
func useDataTempDir(dataDir string) error {
	if os.Getenv("TMPDIR") != "" {
		return nil
	}
	dir, err := filepath.Abs(filepath.Join(dataDir, TempSubdir))
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create temporary directory: %w", err)
	}
	return os.Setenv("TMPDIR", dir)
}
