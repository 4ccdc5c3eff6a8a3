package rate

import (
	"sync"
	"time"
)

// Quota is a Window per key (an agent id), for at most DefaultMaxKeys keys:
// when that many keys have live windows, a new key is refused.
type Quota struct {
	n   int
	len time.Duration

	mu    sync.Mutex // guards keys, total and the windows in keys
	keys  keySet[*Window]
	total uint64 // refused since start
}

// NewQuota returns a Quota admitting n events per key per window d.
func NewQuota(n int, d time.Duration) *Quota {
	return &Quota{n: n, len: d, keys: newKeySet[*Window](DefaultMaxKeys)}
}

// Allow is Window.Allow for key.
func (q *Quota) Allow(key string, now time.Time) (suppressed int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w, ok := q.keys.get(key,
		// A window that ended with nothing left to report is idle.
		func(old *Window) bool { return !now.Before(old.windowEnds) && old.suppressed == 0 },
		func() *Window { return NewWindow(q.n, q.len) })
	if !ok {
		q.total++
		return 0, false
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
