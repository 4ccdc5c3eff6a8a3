package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
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
//
// It first refuses a data directory on a read-only file system, before
// anything starts: the node started its broker and the agent warned that
// bash runs unconfined (its sandbox probe could not make a scratch
// directory) before the audit database failed to open.
func useDataTempDir(dataDir string) error {
	if readOnlyFS(dataDir) {
		return dataDirError(dataDir, fmt.Errorf("open data directory %s: %w", dataDir, syscall.EROFS))
	}
	if os.Getenv("TMPDIR") != "" {
		return nil
	}
	dir, err := filepath.Abs(filepath.Join(dataDir, TempSubdir))
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return dataDirError(dataDir, fmt.Errorf("create temporary directory: %w", err))
	}
	return os.Setenv("TMPDIR", dir)
}

// dataDirError is err, which stopped a node or an agent from starting on
// the data directory dataDir, with what to do when the directory is the
// cause: its file system is read-only (checked first: it may also have
// little free), full (the audit trail wants
// orchestrator.MinAuditFreeBytes free; SQLite may say only "disk I/O
// error"), or this user may not write it (an error about a file in it;
// another file refused names itself).
func dataDirError(dataDir string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w (data directory %s: its file system is mounted read-only, as the kernel does to a card after write errors (see dmesg); "+
			"check the card and remount it read-write, or choose another directory with --data-dir or data_dir)", err, dataDir)
	}
	if free, ferr := freeBytes(dataDir); ferr == nil && free < orchestrator.MinAuditFreeBytes {
		return fmt.Errorf("%w (data directory %s: its file system has %d KiB free; free some space, or choose another directory with --data-dir or data_dir)",
			err, dataDir, free>>10)
	}
	if errors.Is(err, fs.ErrPermission) && strings.Contains(err.Error(), filepath.Clean(dataDir)) {
		return fmt.Errorf("%w (data directory %s: user %d may not write it; change its owner or mode, or choose another directory with --data-dir or data_dir)",
			err, dataDir, os.Getuid())
	}
	return err
}

// readOnlyFS reports whether the file system of path, or of its nearest
// existing parent, is mounted read-only (ST_RDONLY on Linux, MNT_RDONLY
// on the BSDs: both are bit 0 of the statfs flags), or, when path is an
// existing directory, refuses a new file in it as read-only
// (sqlite.DirReadOnly: a card that recent kernels marked emergency_ro
// after write errors refuses every write while statfs says writable).
func readOnlyFS(path string) bool {
	st, err := statfsNearest(path)
	return err == nil && st.Flags&1 != 0 || sqlite.DirReadOnly(path)
}

// freeBytes is what an unprivileged writer may still use on the file
// system of path, or of its nearest existing parent.
func freeBytes(path string) (uint64, error) {
	st, err := statfsNearest(path)
	if err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil //nolint:unconvert // field types differ by platform
}

// statfsNearest is the statfs of path, or of its nearest existing parent.
func statfsNearest(path string) (syscall.Statfs_t, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return syscall.Statfs_t{}, err
	}
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(path, &st)
		if err == nil {
			return st, nil
		}
		parent := filepath.Dir(path)
		if !errors.Is(err, fs.ErrNotExist) || parent == path {
			return syscall.Statfs_t{}, err
		}
		path = parent
	}
}
