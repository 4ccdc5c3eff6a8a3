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
//
// A change is acted on once it has settled: the files look the same at two
// polls in a row. A file rewritten in place (an editor, os.WriteFile) is
// empty or half written for a moment; read then, an empty users file would
// end every agent's session, a half-written one some of them. Settling
// costs one interval of delay.
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
	st := newSettler(stamps(files))
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
				st.applied(stamps(files))
				onChange()
				continue
			case <-t.C:
			}
			if st.observe(stamps(files)) {
				log.Debug("watched broker files changed", logKeyFile, files)
				onChange()
			}
		}
	}()
	return w
}

// settler decides from successive polls when a change has settled.
type settler struct {
	seen, done []fileStamp // the last poll; what onChange last read
}

func newSettler(baseline []fileStamp) *settler {
	return &settler{seen: baseline, done: baseline}
}

// observe takes a poll and tells whether to act on it: it differs from
// what was last acted on and equals the poll before it.
func (s *settler) observe(now []fileStamp) bool {
	settled := slices.EqualFunc(now, s.seen, fileStamp.same)
	s.seen = now
	if !settled || slices.EqualFunc(now, s.done, fileStamp.same) {
		return false
	}
	s.done = now
	return true
}

// applied records that onChange read the files as now (a signal's reload).
func (s *settler) applied(now []fileStamp) { s.seen, s.done = now, now }

// stop ends the polling and waits for it.
func (w *watcher) stop() {
	close(w.done)
	w.wg.Wait()
}
