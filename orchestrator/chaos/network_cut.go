package chaos

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/edge/pause"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// networkCut: the agent reaches the broker through a proxy that starts
// dropping every packet while a call runs. The orchestrator must mark the
// agent offline when its heartbeats stop and fail calls fast; the result
// the agent produced during the cut must wait in its outbox and be
// delivered after the network is back; nothing runs twice.
func networkCut(ctx context.Context, r *run) error {
	before, after := split(r.opts.Calls)
	if err := r.startNode(ctx, ""); err != nil {
		return err
	}
	px, err := StartProxy(strings.TrimPrefix(r.node.BrokerURL(), "tcp://"))
	if err != nil {
		return err
	}
	defer px.Close()
	e, p, err := r.onlineEdge(ctx, "chaos-n", "tcp://"+px.Addr())
	if err != nil {
		return err
	}
	r.say("[1/6] agent %s pid %d reaches broker %s through proxy %s; %d calls", e.id, p.Pid(), r.node.BrokerURL(), px.Addr(), before)
	r.callN(ctx, e.id, before)

	victim, done := r.goCall(ctx, e.id, victimRun)
	if err := r.waitRunning(ctx, victim); err != nil {
		return err
	}
	px.Cut()
	cut := time.Now()
	r.say("[2/6] network cut (every packet dropped) while %s runs", victim.Tag)
	<-done
	r.rep.time("cut call ended (cut to typed error)", victim.Start.Add(victim.Took).Sub(cut))
	if victim.Outcome != string(wire.ErrAgentOffline) && victim.Outcome != string(wire.ErrTimeout) {
		r.rep.problem("%s cut by the network ended %s, want agent_offline or timeout", victim.Tag, victim.Outcome)
	}
	if err := waitFor(ctx, 2*heartbeatTimeout, "agent marked offline", func() bool {
		a := r.node.Catalog().Agents[e.id]
		return !a.Online
	}); err != nil {
		r.rep.problem("%v", err)
	}
	r.rep.time("offline detected (cut to offline)", time.Since(cut))
	r.say("[3/6] agent offline after %s (heartbeat timeout %s); calls now fail fast:", time.Since(cut).Round(time.Millisecond), heartbeatTimeout)
	for range 3 {
		c := r.call(ctx, e.id, shortRun)
		if c.Outcome != string(wire.ErrAgentOffline) {
			r.rep.problem("%s during the cut ended %s, want agent_offline", c.Tag, c.Outcome)
		} else if c.Took > time.Second {
			r.rep.problem("%s during the cut took %s to fail, want under 1 s", c.Tag, c.Took)
		}
		if err := pause.For(ctx, pace); err != nil {
			return err
		}
	}

	// The cut call's result cannot be acknowledged; the agent keeps it in
	// its outbox once the publish times out.
	outbox := filepath.Join(e.dataDir, "audit.db")
	if err := waitFor(ctx, 30*time.Second, "the cut call's report kept in the agent's outbox", func() bool {
		res, err := sqlite.QueryReadOnly(ctx, outbox, `SELECT count(*) FROM outbox`)
		return err == nil && len(res.Rows) == 1 && str(res.Rows[0][0]) != "0"
	}); err != nil {
		return err
	}
	r.say("[4/6] the agent keeps the report of %s in its outbox (%s into the cut)", victim.Tag, time.Since(cut).Round(time.Millisecond))
	px.Restore()
	restored := time.Now()
	r.rep.time("network cut for", restored.Sub(cut))
	ok, err := r.untilSuccess(ctx, e.id)
	if err != nil {
		r.rep.problem("%v", err)
		return nil
	}
	r.rep.time("recovery (network back to first success)", ok.Sub(restored))
	r.say("[5/6] network back; first success after %s", ok.Sub(restored).Round(time.Millisecond))

	rid, err := r.requestID(ctx, victim)
	if err != nil {
		return err
	}
	// Polled after the first success: the arrival is the node's record of
	// it, not the time this loop first looks.
	var arrived time.Time
	if err := waitFor(ctx, 30*time.Second, "the kept report of "+victim.Tag+" delivered", func() bool {
		at, ok, err := r.lateResultAt(ctx, rid)
		arrived = at
		return err == nil && ok
	}); err != nil {
		r.rep.problem("%v", err)
	} else {
		r.rep.time("kept report delivered (network back to arrival)", arrived.Sub(restored))
		r.rep.note("the report of %s, made during the cut, reached the orchestrator after it (audited as late_result %s)", victim.Tag, rid)
	}
	r.say("[6/6] %d more calls", after)
	r.callsAfterRecovery(ctx, e.id, after, ok)
	return nil
}
