package builtin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// gate bounds the calls of one file tool that are running, including those
// the caller has given up on: a goroutine stuck in a system call the
// kernel will not interrupt (a hung NFS or FUSE file system) cannot be
// stopped, only counted, so at most cap(slots) of them can exist.
//
// # Concurrency
//
// A gate is safe for concurrent use. Each goroutine it starts is owned by
// the gate's slot it holds and releases that slot when it returns; it
// returns as soon as the tool does, which honours its context everywhere
// the kernel lets it.
type gate struct {
	slots chan struct{} // one token per running call
}

func newGate(n int) *gate { return &gate{slots: make(chan struct{}, n)} }

// run calls fn with a context bounded by timeout and returns its output,
// or at the deadline a timeout (busy when no slot freed up in time)
// while fn, if stuck, goes on holding its slot.
func (g *gate) run(ctx context.Context, tool string, timeout time.Duration, fn func(context.Context, map[string]any) skills.Output, args map[string]any) skills.Output {
	// Cancelled when run returns: fn is then done, or abandoned past the
	// deadline or a cancellation, when ctx is done anyway.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return skills.Failed(wire.ErrBusy, fmt.Sprintf("%s: %d earlier calls are still running (the file system may be stuck); try again later", tool, cap(g.slots)))
		}
		return skills.Failed(wire.ErrInterrupted, fmt.Sprintf("%s: interrupted before it started", tool))
	}
	out, ok := skills.RunDetached(ctx, tool, func() { <-g.slots }, func() skills.Output { return fn(ctx, args) })
	switch {
	case ok:
		return out
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return skills.Failed(wire.ErrTimeout, fmt.Sprintf("%s: no answer from the file system within its deadline; the call was abandoned", tool))
	}
	return skills.Failed(wire.ErrInterrupted, fmt.Sprintf("%s: interrupted: %v", tool, context.Cause(ctx)))
}

// guarded returns fn run through o's gate with o.FileTimeout.
func (o Options) guarded(tool string, fn func(context.Context, map[string]any) skills.Output) func(context.Context, map[string]any) skills.Output {
	g := newGate(o.MaxFileCalls)
	return func(ctx context.Context, args map[string]any) skills.Output {
		return g.run(ctx, tool, o.FileTimeout, fn, args)
	}
}
