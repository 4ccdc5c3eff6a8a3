package proc

import "context"

// onStartKey is the context key of WithOnStart.
type onStartKey struct{}

// WithOnStart returns a context under which Run calls f with the pid of
// every child it starts, which is also the id of the child's process
// group, once the child runs and before Run waits for it. f runs on the
// goroutine of Run; the child runs meanwhile and its timeout counts from
// when f returns, so f should be quick.
func WithOnStart(ctx context.Context, f func(pid int)) context.Context {
	return context.WithValue(ctx, onStartKey{}, f)
}

// onStart returns the function set by WithOnStart, or nil.
func onStart(ctx context.Context) func(pid int) {
	f, _ := ctx.Value(onStartKey{}).(func(pid int))
	return f
}
