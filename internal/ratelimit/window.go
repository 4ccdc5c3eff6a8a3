package ratelimit

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

// Quota is a Window per key (an agent id), for at most DefaultMaxKeys keys:
// when that many keys have live windows, a new key is refused.
type Quota struct {
	n   int
	len time.Duration

	mu    sync.Mutex // guards keys and total
	keys  map[string]*Window
	total uint64 // refused since start
}

// NewQuota returns a Quota admitting n events per key per window d.
func NewQuota(n int, d time.Duration) *Quota {
	return &Quota{n: n, len: d, keys: map[string]*Window{}}
}

// Allow is Window.Allow for key.
func (q *Quota) Allow(key string, now time.Time) (suppressed int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.keys[key]
	if w == nil {
		if len(q.keys) >= DefaultMaxKeys {
			for k, old := range q.keys {
				// A window that ended with nothing left to report is idle.
				if !now.Before(old.windowEnds) && old.suppressed == 0 {
					delete(q.keys, k)
				}
			}
		}
		if len(q.keys) >= DefaultMaxKeys {
			q.total++
			return 0, false
		}
		w = NewWindow(q.n, q.len)
		q.keys[key] = w
	}
	s, ok := w.allowLocked(now)
	if !ok {
		q.total++
	}
	return s, ok
}

// Refused returns how many events were refused since start, over all keys.
func (q *Quota) Refused() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}
