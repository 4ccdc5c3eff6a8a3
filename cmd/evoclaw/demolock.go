package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// demoLockFile is held by a running demo in its data directory.
const demoLockFile = "demo.lock"

// claimDemoDir refuses a data directory that another process works in,
// before the demo rewrites anything there (the agents' passwords, the
// skill): another demo holds dir/demo.lock, which the caller then holds
// until release; a node (serve, or a demo's) holds the audit database's
// lock. Both are flock locks, which the kernel drops when a process ends.
func claimDemoDir(dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, demoLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("demo lock: %w", err)
	}
	inUse := func(by string) error {
		return fmt.Errorf("%s is in use by %s, and the demo would change its agents' passwords: wait for it to end, or pass --data-dir with another directory", dir, by)
	}
	if err := flockNB(f); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, inUse("another evoclaw demo")
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	release = func() { f.Close() } // closing drops the lock
	if db, err := os.Open(filepath.Join(dir, orchestrator.AuditFile)); err == nil {
		err := flockNB(db)
		db.Close() // drops the probe's lock too
		if errors.Is(err, unix.EWOULDBLOCK) {
			release()
			return nil, inUse("a running evoclaw node (serve or edge)")
		}
	}
	return release, nil
}

// flockNB takes an exclusive flock on f without waiting.
func flockNB(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
