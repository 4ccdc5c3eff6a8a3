//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// freeBytes returns the bytes this user may still write in dir's
// filesystem.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// processAlive reports whether a process with this id exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// openOwnAt opens name in the directory dir (its descriptor; nil: name is
// a path) for reading without following a symbolic link at name, and
// without blocking on a FIFO; it returns the file only when it is a
// regular file (a directory when wantDir), else ErrNotOwnFile.
func openOwnAt(dir *os.File, name string, wantDir bool) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if wantDir {
		flags |= unix.O_DIRECTORY
	}
	at, path := unix.AT_FDCWD, name
	if dir != nil {
		at = int(dir.Fd())
		path = dir.Name() + string(os.PathSeparator) + name
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat(at, name, flags, 0)
		if err != unix.EINTR {
			break
		}
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotOwnFile)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() != wantDir || (!wantDir && !fi.Mode().IsRegular()) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrNotOwnFile)
	}
	return f, nil
}
