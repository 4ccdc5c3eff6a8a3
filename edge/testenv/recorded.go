package testenv

import "sync"

// Recorded collects what the code under test hands over, from any
// goroutine: audit rows, events, progress, requests. The zero value is
// ready for use.
type Recorded[T any] struct {
	mu    sync.Mutex // guards items
	items []T
}

// Add appends v.
func (r *Recorded[T]) Add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
}

// All returns a copy of what was added so far, in order.
func (r *Recorded[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}
