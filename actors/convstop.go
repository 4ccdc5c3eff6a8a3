package actors

import (
	"github.com/asynkron/protoactor-go/actor"
)

// onTerminated turns a tool-call actor that the supervisor gave up on into
// an error result, so the conversation always goes on.
func (c *conversation) onTerminated(ctx actor.Context, who *actor.PID) {
	t := c.cur
	if t == nil {
		return
	}
	s, ok := t.specs[who.Id]
	if !ok {
		return
	}
	delete(t.specs, who.Id)
	if s.finished.Load() {
		return // its callDone is on the way
	}
	res := s.gaveUp()
	self, root, o := ctx.Self(), ctx.ActorSystem().Root, c.o
	go func() {
		msg, aerr := completeCall(o, s.convID, s.call, s.agent(), s.requestID, s.runID, res, o.Now().Sub(s.started), false)
		root.Send(self, &callDone{gen: s.gen, index: s.index, res: res, result: msg, audit: aerr})
	}()
}

// onCancel abandons the current chat (or m.Chat, wherever it is): the LLM
// call is canceled, running tool calls are stopped and their agents told to
// forget them. A queued chat is only dropped.
func (c *conversation) onCancel(ctx actor.Context, m *Cancel) {
	t := c.cur
	if m.Chat != nil && (t == nil || t.chat != m.Chat) {
		for i, q := range c.queue {
			if q.chat == m.Chat {
				c.queue = append(c.queue[:i], c.queue[i+1:]...)
				ctx.Send(q.sender, &Answer{ConversationID: c.id, Err: ErrCanceled})
				return
			}
		}
		return // it ended already
	}
	if t == nil {
		return
	}
	for id, s := range t.specs {
		if s.edges != nil && s.agent() != "" && s.target.Local == nil {
			ctx.Send(s.edges, &CancelDispatch{AgentID: s.agent(), RequestID: s.requestID})
		}
		ctx.Stop(actor.NewPID(ctx.Self().Address, id))
	}
	t.specs = map[string]*callSpec{}
	t.cancelApprovals()
	c.apply(ctx, t.m.Cancel())
}
