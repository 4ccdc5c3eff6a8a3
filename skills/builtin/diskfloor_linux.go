package builtin

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileSystemFree is the free space of f's file system for unprivileged
// use (statfs's f_bavail).
func fileSystemFree(f *os.File) (uint64, error) {
	conn, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var st unix.Statfs_t
	var serr error
	if err := conn.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &st) }); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return st.Bavail * uint64(st.Bsize), nil
}
