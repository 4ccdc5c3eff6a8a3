package actors

import (
	"context"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Caller is the chat a local tool runs for. The conversation puts it in
// the context of every local tool run, so a tool that acts on sessions
// (spawn a sub-agent, ask the person) knows whose chat it serves without a
// second copy of the conversation's state.
type Caller struct {
	// ConversationID is the calling conversation.
	ConversationID string
	// Toolbox is what the calling chat may use (Chat.Toolbox or the
	// conversation's); a sub-agent gets at most this.
	Toolbox Toolbox
	// Progress is the calling chat's live view; nil when nobody watches.
	Progress ProgressFunc
	// Sampling are the calling chat's sampling hints; a sub-agent takes
	// them, so a chat asked for temperature 0 or a seed stays so all down.
	Sampling llm.Sampling
	// Person, Depth, Parent and Spawns are those of the calling Chat.
	Person bool
	Depth  int
	Parent string
	Spawns *SpawnBudget
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller in ctx; ok is false outside a local tool
// run of a conversation.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// caller is the Caller of the current chat.
func (c *conversation) caller() Caller {
	t := c.cur
	return Caller{ConversationID: c.id, Toolbox: t.toolbox, Progress: t.progress, Person: t.chat.Person,
		Depth: t.chat.Depth, Parent: t.chat.Parent, Spawns: t.chat.Spawns, Sampling: t.chat.Sampling}
}
