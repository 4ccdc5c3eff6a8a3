package skills

import (
	"context"
	"fmt"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// RunDetached runs fn on a goroutine of its own and waits for its Output
// or for the end of ctx, whichever comes first; ok is false when ctx ended
// first. fn is never stopped, only abandoned: it should honour ctx, and
// release, called when fn returns, is how the caller counts the calls
// still running (a slot of a bounded channel). A panic in fn is an
// internal error naming tool, as in Toolset.Call.
func RunDetached(ctx context.Context, tool string, release func(), fn func() Output) (out Output, ok bool) {
	done := make(chan Output, 1)
	go func() {
		defer release()
		defer func() {
			if r := recover(); r != nil {
				done <- Failed(wire.ErrInternal, fmt.Sprintf("tool %q crashed: %v", tool, r))
			}
		}()
		done <- fn()
	}()
	select {
	case out := <-done:
		return out, true
	case <-ctx.Done():
		select {
		case out := <-done: // finished in the same instant
			return out, true
		default:
			return Output{}, false
		}
	}
}
