package resilient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrQueueFull is the cause of an llm.KindOverloaded error: more calls than
// the limiter's queue holds were already waiting.
var ErrQueueFull = errors.New("llm call queue full")

// Limiter bounds the calls in flight to one server. Links of a chain that
// talk to the same server share one Limiter, so a Pi's single local model
// serves one inference at a time whichever model name is asked for.
type Limiter struct {
	slots     chan struct{}
	maxQueued int64
	waiting   atomic.Int64
}

// NewLimiter allows max calls at once (at least 1) and maxQueued callers
// waiting for a slot (0: none may wait; negative: unbounded).
func NewLimiter(max, maxQueued int) *Limiter {
	if max < 1 {
		max = 1
	}
	return &Limiter{slots: make(chan struct{}, max), maxQueued: int64(maxQueued)}
}

// Acquire waits for a slot until ctx ends. It fails at once with
// ErrQueueFull when the queue is full, and with ctx's error when ctx ends
// first. A nil Limiter never waits.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
		return l.releaser(), nil
	default:
	}
	if n := l.waiting.Add(1); l.maxQueued >= 0 && n > l.maxQueued {
		l.waiting.Add(-1)
		return nil, ErrQueueFull
	}
	defer l.waiting.Add(-1)
	select {
	case l.slots <- struct{}{}:
		return l.releaser(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// releaser returns the release function of one slot; calling it twice
// frees the slot once.
func (l *Limiter) releaser() func() {
	var once sync.Once
	return func() { once.Do(func() { <-l.slots }) }
}

// Full reports whether an Acquire now would fail at once with
// ErrQueueFull: every slot is held and the queue holds all it may. A nil
// Limiter is never full.
func (l *Limiter) Full() bool {
	if l == nil {
		return false
	}
	return l.maxQueued >= 0 && len(l.slots) == cap(l.slots) && l.waiting.Load() >= l.maxQueued
}

// InFlight reports the calls holding a slot.
func (l *Limiter) InFlight() int {
	if l == nil {
		return 0
	}
	return len(l.slots)
}

// Waiting reports the callers waiting for a slot.
func (l *Limiter) Waiting() int {
	if l == nil {
		return 0
	}
	return int(l.waiting.Load())
}
