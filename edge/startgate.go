package edge

import (
	"context"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// The agent's half of the start gate (edge/wire/startgate.go): a gated tool
// command runs only once the orchestrator said run, after the agent told it
// that the request is recorded. A gated command the agent was not told to
// run never runs: the orchestrator may have given it to another agent.

// maxStartWait bounds how long a gated command waits for its start. The
// orchestrator answers an accepted report at once; only a lost message or
// an orchestrator that went away leaves it waiting this long.
const maxStartWait = 30 * time.Second

// startWait is how long cmd may wait for its start at now: maxStartWait,
// or less when the command expires sooner.
func startWait(cmd wire.Command, now time.Time) time.Duration {
	d := maxStartWait
	if cmd.ExpiresAt > 0 && !now.Before(clockFloor) {
		d = min(d, time.UnixMilli(cmd.ExpiresAt).Sub(now))
	}
	return max(d, 0)
}

// onStart hands a start command to the gated request waiting for it. A
// start for no waiting request (a duplicate, or one that came too late) is
// dropped: that request already ended without running.
func (a *Agent) onStart(cmd wire.Command) {
	p, err := wire.DecodeStartPayload(cmd.Payload)
	if err != nil {
		a.cmdLog.Warn("ignoring malformed start", "request_id", cmd.RequestID, "err", err)
		return
	}
	a.mu.Lock()
	ch := a.gates[cmd.RequestID]
	a.mu.Unlock()
	if ch == nil {
		a.cmdLog.Debug("ignoring start for no waiting request", "request_id", cmd.RequestID, "run", p.Run)
		return
	}
	select {
	case ch <- p.Run:
	default: // it has its answer already
	}
}

// awaitStart announces a gated request as accepted and waits for its
// start. It reports whether the tool may run, and if not why. It is called
// once the request_id is durable in the request log, so a redelivery is
// answered from there, never run again.
func (a *Agent) awaitStart(ctx context.Context, cmd wire.Command) (bool, string) {
	ch := make(chan bool, 1)
	a.mu.Lock()
	a.gates[cmd.RequestID] = ch // bounded by the requests claimed, one per request_id
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.gates, cmd.RequestID)
		a.mu.Unlock()
	}()
	b, err := a.encodeReport(wire.ReportAccepted, wire.Accepted{RequestID: cmd.RequestID})
	if err != nil {
		return false, fmt.Sprintf("encode accepted report: %v", err)
	}
	// Never through the outbox: an accepted report delivered late is no
	// use, and the orchestrator moves the call when it hears nothing.
	if err := a.publishNow(ctx, b); err != nil {
		return false, fmt.Sprintf("could not tell the orchestrator the request was accepted: %v", err)
	}
	wait := startWait(cmd, time.Now())
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case run := <-ch:
		if !run {
			return false, "the orchestrator gave the call to another agent"
		}
		return true, ""
	case <-t.C:
		return false, fmt.Sprintf("no start from the orchestrator within %s", wait.Round(time.Millisecond))
	case <-ctx.Done():
		return false, "the edge agent is shutting down"
	}
}

// notStarted is the result of a gated command that did not run.
func notStarted(why string) skills.Output {
	return skills.Failed(wire.ErrNotStarted, "the call did not run on this agent: "+why)
}
