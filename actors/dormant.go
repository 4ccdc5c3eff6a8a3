package actors

import (
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Dormant conversations.
//
// A conversation actor between two chats holds far more than the
// conversation: its actor context and mailbox, its registry entry and
// props, its receive-timeout timer, the set of its children (protoactor
// keeps the last tool-call actor reachable from it after it stopped, with
// that call's spec and mailbox), and a history whose messages and strings
// were allocated one by one across the turn, in heap spans shared with the
// turn's garbage. Once it has been idle for ConvOptions.DormantAfter, the
// actor hands its history to the manager, compacted, and stops: a dormant
// conversation is one map entry and four allocations. Its next chat starts
// an actor with that history, without reading the store; IdleTimeout later
// (or on Evict) the manager forgets it, and the next chat reads the store,
// as after a passivation.

// dormantConv is what the manager keeps of a dormant conversation: what
// its next actor needs and nothing else.
type dormantConv struct {
	history []llm.Message
	// repair: results closeCut gave to calls the stored history left
	// without one, not stored yet (conversation.repair).
	repair []llm.Message
	// until is when the manager forgets it.
	until time.Time
	// bytes is what it holds (historyBytes), counted against
	// ConvOptions.MaxDormantBytes.
	bytes int
}

// sweepDormant is the manager's timer telling it to forget the dormant
// conversations whose time is up.
type sweepDormant struct{}

// compactHistory copies msgs into as few allocations as it can: the
// messages in one slice, their tool calls in another, all their strings
// in one string and all the calls' arguments in one byte slice. Every
// slice is capped at its length, so an append to the result or to one of
// its messages' slices copies rather than writes into a neighbour. Images
// (Parts) are shared with msgs, not copied: they are never modified.
func compactHistory(msgs []llm.Message) []llm.Message {
	if len(msgs) == 0 {
		return nil
	}
	text, args, calls := 0, 0, 0
	for _, m := range msgs {
		text += len(m.Content) + len(m.ToolCallID) + len(m.Name)
		if internRole(m.Role) == "" {
			text += len(m.Role)
		}
		for _, c := range m.ToolCalls {
			text += len(c.ID) + len(c.Name) + len(c.ArgumentsError)
			args += len(c.Arguments)
		}
		calls += len(m.ToolCalls)
	}
	var b strings.Builder
	b.Grow(text)
	var argBuf []byte
	if args > 0 {
		argBuf = make([]byte, 0, args)
	}
	// put appends s to the arena; the arena's string is cut once it is
	// complete (strings.Builder never moves what it wrote once grown).
	type ref struct {
		dst      *string
		from, to int
	}
	refs := make([]ref, 0, 3*len(msgs)+3*calls)
	put := func(dst *string, s string) {
		if s == "" {
			return
		}
		from := b.Len()
		b.WriteString(s)
		refs = append(refs, ref{dst, from, b.Len()})
	}
	out := make([]llm.Message, len(msgs))
	var callArena []llm.ToolCall
	if calls > 0 {
		callArena = make([]llm.ToolCall, calls)
	}
	for i, m := range msgs {
		o := &out[i]
		o.Parts, o.IsError = m.Parts, m.IsError
		if r := internRole(m.Role); r != "" {
			o.Role = r
		} else {
			put(&o.Role, m.Role)
		}
		put(&o.Content, m.Content)
		put(&o.ToolCallID, m.ToolCallID)
		put(&o.Name, m.Name)
		if n := len(m.ToolCalls); n > 0 {
			o.ToolCalls, callArena = callArena[:n:n], callArena[n:]
			for j, c := range m.ToolCalls {
				oc := &o.ToolCalls[j]
				put(&oc.ID, c.ID)
				put(&oc.Name, c.Name)
				put(&oc.ArgumentsError, c.ArgumentsError)
				if c.Arguments != nil {
					from := len(argBuf)
					argBuf = append(argBuf, c.Arguments...)
					oc.Arguments = argBuf[from:len(argBuf):len(argBuf)]
				}
			}
		}
	}
	all := b.String()
	for _, r := range refs {
		*r.dst = all[r.from:r.to]
	}
	return out
}

// internRole is the package's constant for a role, so that compacted
// messages share it, or "" for a role it does not know.
func internRole(role string) string {
	switch role {
	case llm.RoleUser:
		return llm.RoleUser
	case llm.RoleAssistant:
		return llm.RoleAssistant
	case llm.RoleTool:
		return llm.RoleTool
	case llm.RoleSystem:
		return llm.RoleSystem
	}
	return ""
}

// historyBytes is about what msgs hold in memory (llm.Message.Size).
func historyBytes(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += m.Size()
	}
	return n
}

// keepDormant keeps d as conversation id's dormant state, unless the
// manager holds MaxDormant conversations or MaxDormantBytes of history
// already (then it is forgotten: the next chat reads the store). It arms
// the sweep when none is armed.
func (m *manager) keepDormant(ctx actor.Context, id string, d *dormantConv) {
	m.forgetDormant(id) // none is kept while the conversation has an actor; this keeps the count true regardless
	d.bytes = historyBytes(d.history) + historyBytes(d.repair)
	if len(m.dormant) >= m.o.MaxDormant || m.dormantBytes+d.bytes > m.o.MaxDormantBytes {
		return
	}
	d.until = m.o.Now().Add(m.o.IdleTimeout - m.o.DormantAfter)
	m.dormant[id] = d
	m.dormantBytes += d.bytes
	if !m.sweepArmed {
		m.armSweep(ctx, m.o.IdleTimeout-m.o.DormantAfter)
	}
}

// armSweep asks for a sweepDormant after d, and no sooner than an eighth
// of the dormant time after the last one: a sweep reads every dormant
// conversation, so a few of them expiring at a time must not each cost
// one.
func (m *manager) armSweep(ctx actor.Context, d time.Duration) {
	if floor := (m.o.IdleTimeout - m.o.DormantAfter) / 8; d < floor {
		d = floor
	}
	m.sweepArmed = true
	root, self := ctx.ActorSystem().Root, ctx.Self()
	time.AfterFunc(d, func() { root.Send(self, sweepDormant{}) })
}

// sweep forgets the dormant conversations whose time is up and arms the
// next sweep for the earliest of the others.
func (m *manager) sweep(ctx actor.Context) {
	m.sweepArmed = false
	now := m.o.Now()
	var next time.Time
	for id, d := range m.dormant {
		if !d.until.After(now) {
			m.forgetDormant(id)
			continue
		}
		if next.IsZero() || d.until.Before(next) {
			next = d.until
		}
	}
	if len(m.dormant) == 0 {
		m.dormant = map[string]*dormantConv{} // a burst's map does not stay grown
		return
	}
	m.armSweep(ctx, next.Sub(now))
}

// forgetDormant forgets conversation id's dormant state, if any.
func (m *manager) forgetDormant(id string) {
	if d, ok := m.dormant[id]; ok {
		m.dormantBytes -= d.bytes
		delete(m.dormant, id)
	}
}
