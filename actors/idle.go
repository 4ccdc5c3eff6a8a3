package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// idleTick is the conversation's idle timer firing.
//
// Not protoactor's receive timeout: its timer, when it fires, cancels the
// timeout from the timer's goroutine, writing fields the actor's own
// goroutine reads as it takes a message (a data race), and leaves the
// actor without a timeout from then on (a conversation busy when it fired
// was never idle again).
type idleTick struct{}

// armIdle starts the idle timer: the actor checks, idle time after its
// last message, whether it is idle (idleTick).
func (c *conversation) armIdle(ctx actor.Context) {
	_, idle := c.o.dormancy()
	root, self := ctx.ActorSystem().Root, ctx.Self()
	c.idleTimer = time.AfterFunc(idle, func() { root.Send(self, idleTick{}) })
}

// stopIdle stops the idle timer, if it started.
func (c *conversation) stopIdle() {
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
}

// onIdle asks the manager to stop this actor if it is idle: dormant when
// its idle timer fired and conversations go dormant, else passivated.
func (c *conversation) onIdle(ctx actor.Context, timedOut bool) {
	if c.cur != nil || len(c.queue) > 0 || c.loading {
		return
	}
	// The manager stops us, so no Chat is forwarded to a dead actor.
	p := &passivate{id: c.id, pid: ctx.Self(), received: *c.received}
	if dormant, _ := c.o.dormancy(); dormant && timedOut && c.broken == nil {
		p.keep = &dormantConv{history: compactHistory(c.history), repair: compactHistory(c.repair)}
	}
	ctx.Send(ctx.Parent(), p)
}
