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

// Kept takes back the refusal Allow just made for key, when the caller
// stored that event all the same (as a mark that the quota was reached):
// it no longer counts in Refused nor in what the next admitted event of
// key learns was refused before it. A key with no refusal to take back is
// left as it is.
func (q *Quota) Kept(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w, tracked := q.keys.m[key]
	switch {
	case tracked && w.suppressed > 0:
		w.suppressed--
		w.total--
	case tracked || q.total == 0:
		return
	}
	// Untracked: refused because DefaultMaxKeys windows were live, which
	// only Allow's total counted. (A window that refused is not evicted
	// before it admits again.)
	q.total--
}
