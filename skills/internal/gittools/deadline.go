package gittools

import (
	"context"
	"fmt"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// maxRunning bounds the git calls of one toolset in flight, those left
// running past their deadline included: go-git does not stop a status or
// diff of a huge tree when its context ends, so the caller is answered at
// the deadline and the work finishes (or not) on its own, at most this
// many at a time.
const maxRunning = 4

// deadlined runs run so that the caller gets its answer at ctx's end at
// the latest: a timeout, while the work goes on in its goroutine holding
// one of sem's slots. With every slot held the call is refused as busy.
func deadlined(sem chan struct{}, name string, run func(context.Context, map[string]any) skills.Output) func(context.Context, map[string]any) skills.Output {
	return func(ctx context.Context, args map[string]any) skills.Output {
		select {
		case sem <- struct{}{}:
		default:
			return skills.Failed(wire.ErrBusy, fmt.Sprintf("%s: %d git calls are still running (some past their deadline); try again later", name, cap(sem)))
		}
		if out, ok := skills.RunDetached(ctx, name, func() { <-sem }, func() skills.Output { return run(ctx, args) }); ok {
			return out
		}
		return skills.Failed(wire.ErrTimeout, fmt.Sprintf("%s: no result before the deadline (%v)", name, context.Cause(ctx)))
	}
}
