package chaos

import (
	"context"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
)

// victimRun is how long the tool of a call cut by a fault sleeps: long
// enough that the fault lands while it runs.
const victimRun = 1.0

// brokerRestart: the orchestrator and one agent talk through a broker the
// orchestrator does not own (`evoclaw broker`, a child process). While a
// call runs, the broker is SIGKILLed; it is restarted on the same port,
// with no retained messages or sessions.
func brokerRestart(ctx context.Context, r *run) error {
	before, after := split(r.opts.Calls)
	b, addr, err := r.startBroker(ctx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	url := "tcp://" + addr
	r.say("[1/5] broker pid %d at %s; orchestrator in this process connects to it", b.Pid(), url)
	if err := r.startNode(ctx, url); err != nil {
		return err
	}
	e, p, err := r.onlineEdge(ctx, "chaos-a", url)
	if err != nil {
		return err
	}
	r.say("[2/5] agent %s pid %d online; %d calls before the fault", e.id, p.Pid(), before)
	r.callN(ctx, e.id, before)

	victim, done := r.goCall(ctx, e.id, victimRun)
	if err := r.waitRunning(ctx, victim); err != nil {
		return err
	}
	killed := time.Now()
	if err := b.Kill(); err != nil {
		return err
	}
	r.say("[3/5] broker SIGKILLed while %s runs; it stays down until a call made now has ended", victim.Tag)
	// The broker stays down until a call made during the outage has
	// failed: long enough for the orchestrator to notice, and a check
	// that calls end typed while there is no broker.
	r.call(ctx, e.id, shortRun)

	var b2 *child.Process
	err = waitFor(ctx, 10*time.Second, "broker restarted on "+addr, func() bool {
		var err error
		b2, _, err = r.startBroker(ctx, addr)
		return err == nil
	})
	if err != nil {
		return err
	}
	up := time.Now()
	r.rep.time("broker down (kill to restarted broker ready)", up.Sub(killed))
	r.say("[4/5] broker restarted, pid %d, after %s", b2.Pid(), up.Sub(killed).Round(time.Millisecond))
	// Recovery is measured while the cut call may still be waiting.
	ok, err := r.untilSuccess(ctx, e.id)
	<-done
	r.rep.note("the call in flight at the kill (%s) ended %s after %s", victim.Tag, victim.Outcome, victim.Took.Round(time.Millisecond))
	if victim.Outcome == string(wire.ErrTimeout) {
		r.rep.note("its result never reached the orchestrator: a restarted broker keeps no sessions, so a result published before the orchestrator has subscribed again is dropped unless the command is sent again")
	}
	if err != nil {
		r.rep.problem("%v", err)
		return nil
	}
	r.rep.time("recovery (broker ready to first success)", ok.Sub(up))
	r.rep.time("recovery (kill to first success)", ok.Sub(killed))
	r.say("[5/5] first success %s after the restart; %d more calls", ok.Sub(up).Round(time.Millisecond), after)
	r.callsAfterRecovery(ctx, e.id, after, ok)
	return nil
}

// callsAfterRecovery makes n more calls to agent; every call that started
// after recovered must succeed.
func (r *run) callsAfterRecovery(ctx context.Context, agent string, n int, recovered time.Time) {
	r.callN(ctx, agent, n)
	for _, c := range r.callsAfter(recovered) {
		if c.Outcome != "success" {
			r.rep.problem("%s after recovery: %s", c.Tag, c.Outcome)
		}
	}
}

// callsAfter returns the calls started after t.
func (r *run) callsAfter(t time.Time) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if c.Start.After(t) {
			out = append(out, *c)
		}
	}
	return out
}
