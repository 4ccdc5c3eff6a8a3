//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock (flock) on the database file
// for the life of the Store, so that a second process cannot write the
// same trail: two writers would each extend the hash chain from the head
// they read at open and fork it. flock locks are apart from the POSIX
// record locks SQLite takes on the same file, so they do not disturb
// each other; the kernel drops the lock when the process dies, however it
// dies. A file system without flock (some network file systems) gets no
// lock, and the caller is told so (nil file, nil error, unlocked true).
func lockFile(path string) (f *os.File, unlocked bool, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, false, err
	}
	if unlocked, err = lockOpen(f); err != nil || unlocked {
		f.Close()
		return nil, unlocked, err
	}
	return f, false, nil
}

// lockOpen takes lockFile's lock on the open file f.
func lockOpen(f *os.File) (unlocked bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, fmt.Errorf("%w: another process has it open for writing (a second serve or edge on the same data directory?)", ErrInUse)
	case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
		return true, nil
	default:
		return false, fmt.Errorf("lock: %w", err)
	}
}
