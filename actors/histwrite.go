package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/actors/loop"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// When a chat's history is durable (the promises, in order of a chat):
//
//   - Before any tool call of a model turn is dispatched, the history up
//     to and including the assistant message that asks for it is stored,
//     and every audit row queued so far is committed (one waited write).
//     A restarted node therefore knows every call that may have run: a
//     stored assistant message whose calls have no stored result was cut,
//     and the next load answers them as interrupted (closeCut).
//   - Before the answer is sent, the rest of the chat is stored and every
//     queued audit row committed (one waited write); a failed row ends the
//     chat with ErrAudit and no answer text.
//   - A completion is no acknowledgement to anyone, so nothing is stored
//     just for it: the model may see a user message or a tool result that
//     the next waited write makes durable. A crash before that write loses
//     only what nobody was told about (the chat was never answered).
//
// A chat with one tool call thus waits for two history writes, not three.

// persisted says the write before a dispatch ended; effects are the
// model turn's, carried out now.
type persisted struct {
	gen     int
	effects []loop.Effect
	err     error
}

// startsCalls reports whether effects dispatch a tool call.
func startsCalls(effects []loop.Effect) bool {
	for _, e := range effects {
		if _, ok := e.(loop.RunCall); ok {
			return true
		}
	}
	return false
}

// dispatchAfterStore records the assistant message msg of the turn that
// asks for tool calls, stores the history and waits for the queued audit
// rows off the mailbox, then carries out effects (persisted).
func (c *conversation) dispatchAfterStore(ctx actor.Context, msg llm.Message, effects []loop.Effect) {
	t := c.cur
	msg.Role = llm.RoleAssistant
	c.add(msg)
	t.preRecorded = true
	store, audits := c.storeFunc(t), t.takeAudits()
	self, root, gen, timeout := ctx.Self(), ctx.ActorSystem().Root, t.gen, c.o.AuditTimeout
	hot.Go(func() {
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := store(sctx)
		if err == nil {
			if aerr := awaitAudits(sctx, audits); aerr != nil {
				err = fmt.Errorf("%w: %w", ErrAudit, aerr)
			}
		}
		root.Send(self, &persisted{gen: gen, effects: effects, err: err})
	})
}

func (c *conversation) onPersisted(ctx actor.Context, m *persisted) {
	t := c.cur
	if t == nil || m.gen != t.gen {
		return // the turn was canceled meanwhile; end() closed its calls
	}
	if m.err != nil {
		c.apply(ctx, t.m.ModelFailed(m.err))
		return
	}
	c.apply(ctx, m.effects)
}

// cutText is the result given to a call whose assistant message is stored
// without a result for it.
const cutText = "the chat ended (canceled, stopped or the node restarted) before this call's result was kept; " +
	"it may or may not have run"

// closeCut returns a tool message for every call of the last assistant
// message of history that has no result after it, so that the history a
// model sees never holds a call without its answer. Only the tail can hold
// one: results are stored before anything that follows them.
func closeCut(history []llm.Message) []llm.Message {
	last := -1
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role == llm.RoleTool {
			continue
		}
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			last = i
		}
		break
	}
	if last < 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range history[last+1:] {
		answered[m.ToolCallID] = true
	}
	var out []llm.Message
	for _, call := range history[last].ToolCalls {
		if !answered[call.ID] {
			out = append(out, toolMessage(call, skills.Failed(wire.ErrInterrupted, cutText)))
		}
	}
	return out
}

// load reads the stored history off the mailbox; chats queue meanwhile.
func (c *conversation) load(ctx actor.Context) {
	if c.o.History == nil {
		return
	}
	c.loading = true
	self, root, id, h := ctx.Self(), ctx.ActorSystem().Root, c.id, c.o.History
	// The read's time counts from now, its wait for a turn included.
	deadline := time.Now().Add(c.o.AuditTimeout)
	c.o.loads.Go(func() {
		lctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		msgs, err := h.LoadHistory(lctx, id)
		root.Send(self, &historyLoaded{msgs: msgs, err: err})
	})
}

func (c *conversation) onLoaded(ctx actor.Context, m *historyLoaded) {
	c.loading = false
	if m.err != nil {
		// Answering without the stored history would silently fork the
		// conversation: refuse, and stop so that the next chat loads again.
		c.o.Logger.Error("load conversation history", "conversation", c.id, "err", m.err)
		c.fail(ctx, fmt.Errorf("%w: load %s: %w", ErrHistory, c.id, m.err))
		return
	}
	c.history = Window(m.msgs, c.o.MaxHistoryBytes)
	if fix := closeCut(c.history); len(fix) > 0 {
		// A node stopped while calls of this conversation ran: they are
		// answered as interrupted before the model sees the history again.
		c.o.Logger.Warn("stored history ends with tool calls without results; answered as interrupted",
			"conversation", c.id, "calls", len(fix))
		c.history = append(c.history, fix...)
		c.repair = fix
	}
	c.next(ctx)
}
