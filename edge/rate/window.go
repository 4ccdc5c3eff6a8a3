package rate

import (
	"sync"
	"time"
)

// Window admits at most N events per fixed window of time and counts the
// rest; the next admitted event learns how many were refused since the one
// before it.
type Window struct {
	n   int
	len time.Duration

	mu         sync.Mutex // guards the fields below
	windowEnds time.Time
	used       int
	suppressed int
	total      uint64 // refused since start
}

// NewWindow returns a Window admitting n events per window of length d.
func NewWindow(n int, d time.Duration) *Window {
	return &Window{n: n, len: d}
}

// Allow reports whether an event at now is admitted, and, when it is, how
// many were refused since the last admitted one.
func (w *Window) Allow(now time.Time) (suppressed int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.allowLocked(now)
}

// allowLocked is Allow with w.mu held, or, for a window of a Quota, with
// the Quota's mu held.
func (w *Window) allowLocked(now time.Time) (int, bool) {
	if !now.Before(w.windowEnds) {
		w.windowEnds, w.used = now.Add(w.len), 0
	}
	if w.used >= w.n {
		w.suppressed++
		w.total++
		return 0, false
	}
	w.used++
	s := w.suppressed
	w.suppressed = 0
	return s, true
}

// Refused returns how many events were refused since start.
func (w *Window) Refused() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}
