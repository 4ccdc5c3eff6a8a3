package resilient

import (
	"context"
	"sync"
)

// background owns the goroutines a chain runs besides calls: capability
// probes and warm-ups started by whoever built the chain.
type background struct {
	mu     sync.Mutex // guards ctx, cancel and closed
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

// Go runs fn in a goroutine owned by the chain; Close cancels its context
// and waits for it. After Close, Go does nothing and reports false.
func (c *Chain) Go(fn func(ctx context.Context)) bool {
	b := &c.bg
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(context.Background())
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn(b.ctx)
	}()
	return true
}

// Close stops the chain's background work and waits for it. Calls still
// work afterwards; Close is idempotent.
func (c *Chain) Close() error {
	b := &c.bg
	b.mu.Lock()
	b.closed = true
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
	return nil
}
