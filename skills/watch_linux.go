//go:build linux

package skills

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// watchMask is every inotify event that can change what a scan sees: an
// entry appearing, disappearing, renamed, written or with new times.
const watchMask = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MODIFY | syscall.IN_ATTRIB |
	syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_CLOSE_WRITE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF

// inotifyWatch tells a catalog whether its skill files may have changed,
// with one non-blocking read of an inotify descriptor instead of listing
// every directory and stating every skill.toml. The kernel queues an event
// when the change is made, so a change made before a lookup is seen by
// that lookup.
type inotifyWatch struct {
	fd  int
	box *fdBox // what the cleanup closes, unless close did first
}

// fdBox holds a descriptor apart from its watch, for runtime.AddCleanup.
type fdBox struct{ fd int }

// newWatch watches the roots, every directory in them and every
// skill.toml that exists now (following symbolic links, as a scan does). It
// returns nil when something cannot be watched (a root is missing, the
// watch limit is reached): the catalog then scans on every lookup, as
// before. Watches are armed before the caller scans, so a change made
// during the scan is seen by the next lookup.
func newWatch(roots []string) dirWatch {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &inotifyWatch{fd: fd, box: &fdBox{fd: fd}}
	ok := func() bool {
		for _, root := range roots {
			if _, err := syscall.InotifyAddWatch(fd, root, watchMask|syscall.IN_ONLYDIR); err != nil {
				return false // missing: its appearance must be seen by a scan
			}
			if !w.file(filepath.Join(root, FileName)) {
				return false
			}
			entries, err := os.ReadDir(root)
			if err != nil {
				return false
			}
			for _, e := range entries {
				dir := filepath.Join(root, e.Name())
				if _, err := syscall.InotifyAddWatch(fd, dir, watchMask|syscall.IN_ONLYDIR); err != nil {
					if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENOENT) {
						continue // a file, or gone already (the root's watch saw that)
					}
					return false
				}
				if !w.file(filepath.Join(dir, FileName)) {
					return false
				}
			}
		}
		return true
	}()
	if !ok {
		syscall.Close(fd)
		return nil
	}
	// A catalog has no Close: the descriptor goes with the watch.
	runtime.AddCleanup(w, func(b *fdBox) {
		if b.fd >= 0 {
			syscall.Close(b.fd)
		}
	}, w.box)
	return w
}

// file watches a skill.toml itself, which matters when it is a symbolic
// link to a file elsewhere. A missing one is fine: its directory's watch
// sees it appear.
func (w *inotifyWatch) file(path string) bool {
	_, err := syscall.InotifyAddWatch(w.fd, path, watchMask)
	return err == nil || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR)
}

// changed reports whether any event (or an overflow of the queue, or an
// error) came since the watch was armed. Once true, the watch is spent:
// the caller arms a new one.
func (w *inotifyWatch) changed() bool {
	var buf [syscall.SizeofInotifyEvent + syscall.NAME_MAX + 1]byte
	n, err := syscall.Read(w.fd, buf[:])
	runtime.KeepAlive(w)
	if errors.Is(err, syscall.EAGAIN) {
		return false
	}
	return n > 0 || err != nil
}

// close releases the descriptor now rather than at garbage collection.
func (w *inotifyWatch) close() {
	if w.box.fd >= 0 {
		syscall.Close(w.box.fd)
		w.box.fd = -1
	}
}
