package edge

import "syscall"

// dataDirFree is what an unprivileged writer may still use on the file
// system of dir, as the node measures its own (root may have a little
// more, which a full card soon takes too).
func dataDirFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
