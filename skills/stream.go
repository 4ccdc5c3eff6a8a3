package skills

import (
	"context"

	"github.com/evoclaw/evoclaw/skills/proc"
)

// OutputFunc receives the output of a running tool as it is produced; see
// proc.Spec.OnOutput for its contract: p is valid only during the call,
// calls for stdout and stderr may run concurrently, and it must return at
// once.
type OutputFunc func(s proc.Stream, p []byte)

type outputKey struct{}

// WithOutput returns a context under which tools that run a process (skill
// binaries, the bash built-in) pass their output to f while they run, in
// addition to returning it in their Output. Tools that cannot stream (MCP
// tools, remote backends) ignore it. A nil f is no streaming.
func WithOutput(ctx context.Context, f OutputFunc) context.Context {
	return context.WithValue(ctx, outputKey{}, f)
}

// StreamOf returns the OutputFunc set on ctx by WithOutput, or nil.
func StreamOf(ctx context.Context) OutputFunc {
	f, _ := ctx.Value(outputKey{}).(OutputFunc)
	return f
}
