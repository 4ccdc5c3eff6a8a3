package actors

import (
	"fmt"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// Forgetting agents. Every agent id the registry hears of gets an actor (a
// mailbox of AgentMailboxSize slots allocated up front, a tick every
// TickInterval), a Catalog entry and gauges. Kept for the node's life, an
// agent id that connected once and never came back cost about 25 KB of
// heap for ever, and every presence change copies the Catalog: 10,000 such
// ids took a node from 36 to 553 MB. So the registry forgets an agent
// offline with nothing in flight for ForgetAfter, and knows at most
// MaxAgents: a new id past it forgets the one heard from longest ago.

// sweepAgents asks the registry to forget the agents offline for longer
// than ForgetAfter.
type sweepAgents struct{}

// maxSweepInterval is the longest time between two sweeps.
const maxSweepInterval = time.Minute

// startSweeps sends the registry sweepAgents every ForgetAfter/8, at most
// every minute and at least every TickInterval.
func (r *registry) startSweeps(ctx actor.Context) {
	if r.opts.ForgetAfter < 0 {
		return
	}
	every := max(min(r.opts.ForgetAfter/8, maxSweepInterval), r.opts.TickInterval)
	r.stopSweeps = sendEvery(ctx.ActorSystem().Root, every, ctx.Self(), &sweepAgents{})
}

// idle returns when agent id was last heard from (or its actor spawned,
// if later) and whether it may be forgotten: the Catalog has it neither
// online nor of unknown presence, and no request of the tool loop waits
// on it.
func (r *registry) idle(id string, cat *Catalog) (time.Time, bool) {
	a, ok := cat.Agents[id]
	if !ok || a.Callable() {
		return time.Time{}, false
	}
	heard := a.LastSeen
	if g := r.gauges.lookup(id); g != nil {
		if g.inFlight.Load() > 0 {
			return time.Time{}, false
		}
		if ns := g.lastSeen.Load(); ns != 0 && time.Unix(0, ns).After(heard) {
			heard = time.Unix(0, ns)
		}
	}
	if s := r.since[id]; s.After(heard) {
		heard = s
	}
	return heard, true
}

// sweep forgets every agent idle for longer than ForgetAfter at now.
func (r *registry) sweep(ctx actor.Context, now time.Time) {
	if r.opts.ForgetAfter < 0 {
		return
	}
	cat := r.cat.load()
	for id := range r.children {
		if heard, ok := r.idle(id, cat); ok && now.Sub(heard) > r.opts.ForgetAfter {
			r.forget(ctx, id, "offline since "+heard.UTC().Format(time.RFC3339))
		}
	}
}

// makeRoom is called before a new agent id gets an actor: past MaxAgents
// it forgets the idle agent heard from longest ago, and reports false
// (the message is dropped) when every agent known is online or busy.
func (r *registry) makeRoom(ctx actor.Context, id string) bool {
	if len(r.children) < r.opts.MaxAgents {
		return true
	}
	cat := r.cat.load()
	oldest, when := "", time.Time{}
	for k := range r.children {
		if heard, ok := r.idle(k, cat); ok && (oldest == "" || heard.Before(when)) {
			oldest, when = k, heard
		}
	}
	if oldest == "" {
		r.opts.Logger.Warn("dropping message for a new edge agent: as many agents as max_agents are known, each online or busy",
			"agent", id, "max_agents", r.opts.MaxAgents)
		if d, ok := ctx.Message().(*Dispatch); ok {
			ctx.Send(d.ReplyTo, &DispatchFailed{RequestID: d.Command.RequestID, Type: wire.ErrAgentOffline,
				Err: fmt.Sprintf("edge agent %q is not known to this orchestrator, which knows its most agents (%d)", id, r.opts.MaxAgents), Movable: !d.Started})
		}
		return false
	}
	r.forget(ctx, oldest, fmt.Sprintf("max_agents (%d) known and a new agent was heard of", r.opts.MaxAgents))
	return true
}

// forget stops agent id's actor; its Catalog entry and gauges go once the
// actor has stopped (terminated), so that it cannot publish them again.
// A message for id meanwhile starts a new actor.
func (r *registry) forget(ctx actor.Context, id, why string) {
	pid := r.children[id]
	delete(r.children, id)
	delete(r.since, id)
	if r.leaving == nil {
		r.leaving = map[string]string{}
	}
	r.leaving[pid.Id] = id
	ctx.Stop(pid)
	r.opts.Logger.Info("edge agent forgotten", "agent", id, "why", why)
}

// terminated handles the end of a child actor.
func (r *registry) terminated(who *actor.PID) {
	for k, pid := range r.children {
		if pid.Equal(who) {
			delete(r.children, k)
			delete(r.since, k)
		}
	}
	id, ok := r.leaving[who.Id]
	if !ok {
		return
	}
	delete(r.leaving, who.Id)
	if _, back := r.children[id]; !back {
		r.cat.remove(id)
		r.gauges.remove(id)
	}
}

// childName names the actor of agent id: "edge-{id}", or, while a
// forgotten actor of the same id is still stopping, a name of its own.
func (r *registry) childName(id string) string {
	for _, leaving := range r.leaving {
		if leaving == id {
			r.spawns++
			return "edge-" + id + "." + strconv.FormatUint(r.spawns, 10)
		}
	}
	return "edge-" + id
}
