package sqlite

import "syscall"

// mountedReadOnly reports whether the file system holding dir is mounted
// read-only (ST_RDONLY in its statfs flags).
func mountedReadOnly(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Flags&1 != 0 // ST_RDONLY
}
