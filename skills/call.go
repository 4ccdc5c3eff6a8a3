package skills

import "context"

// Call tells a tool about the call it runs for: what the wire command or
// the tool loop knew. Tools that keep state per conversation (todowrite)
// read it from their context.
type Call struct {
	// ConversationID is the conversation the call belongs to; empty when
	// the caller named none.
	ConversationID string
}

type callKey struct{}

// WithCall returns ctx carrying c for the tools run with it.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallOf returns the Call of ctx, the zero value when there is none.
func CallOf(ctx context.Context) Call {
	c, _ := ctx.Value(callKey{}).(Call)
	return c
}
