package actors

import "github.com/asynkron/protoactor-go/actor"

// StateQuery asks the conversation manager for one conversation's state;
// it answers with *SessionState.
type StateQuery struct {
	ConversationID string
}

// SessionState is what a conversation is doing now.
type SessionState struct {
	ConversationID string
	// Loaded is true when the conversation has an actor or is dormant (it
	// ran recently); a conversation that is neither is idle with nothing
	// queued.
	Loaded bool
	// Running is true while a chat is being answered.
	Running bool
	// Queued counts chats waiting behind the running one.
	Queued int
}

// onStateQuery answers a StateQuery forwarded by the manager.
func (c *conversation) onStateQuery(ctx actor.Context) {
	ctx.Respond(&SessionState{ConversationID: c.id, Loaded: true, Running: c.cur != nil || c.loading, Queued: len(c.queue)})
}

// onStateQuery answers for a conversation that has no actor, or forwards.
func (m *manager) onStateQuery(ctx actor.Context, q *StateQuery) {
	if pid, ok := m.children[q.ConversationID]; ok {
		ctx.Forward(pid)
		return
	}
	_, dormant := m.dormant[q.ConversationID]
	ctx.Respond(&SessionState{ConversationID: q.ConversationID, Loaded: dormant})
}
