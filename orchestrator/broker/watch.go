package broker

import (
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
)

// watcher polls a few files and calls onChange when any of them changed
// (appeared, vanished, or got another inode, size or modification time), or
// when a signal arrives on sig (nil: none). Polling a handful of stat calls
// every few seconds costs nothing measurable, needs no inotify support, and
// sees an atomic rename.
type watcher struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// fileStamp is what the watcher compares; nil info means the file is absent.
type fileStamp struct{ info os.FileInfo }

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.info.Size() == b.info.Size() && a.info.ModTime().Equal(b.info.ModTime())
}

func stamps(files []string) []fileStamp {
	out := make([]fileStamp, len(files))
	for i, f := range files {
		if fi, err := os.Stat(f); err == nil {
			out[i].info = fi
		}
	}
	return out
}

// startWatcher starts polling files every interval. The state at start is
// the baseline: only later changes call onChange.
func startWatcher(interval time.Duration, files []string, sig <-chan os.Signal, onChange func(), log *slog.Logger) *watcher {
	w := &watcher{done: make(chan struct{})}
	if len(files) == 0 && sig == nil {
		return w
	}
	last := stamps(files)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-sig:
				log.Info("reloading mqtt identities and certificate on signal")
				last = stamps(files)
				onChange()
				continue
			case <-t.C:
			}
			now := stamps(files)
			if !slices.EqualFunc(now, last, fileStamp.same) {
				log.Debug("watched broker files changed", logKeyFile, files)
				last = now
				onChange()
			}
		}
	}()
	return w
}

// stop ends the polling and waits for it.
func (w *watcher) stop() {
	close(w.done)
	w.wg.Wait()
}
