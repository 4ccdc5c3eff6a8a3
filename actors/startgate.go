package actors

import (
	"context"
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// The orchestrator's half of the start gate (edge/wire/startgate.go). The
// edge actor is the one place that decides, in its mailbox, both whether a
// gated call may still move (failAll: gated and not started) and whether
// the agent may run it (here): once it says run, the call is started and
// never moves; a call that moved or ended is no longer pending, and its
// agent is told not to run it.

// noStartPerSecond bounds the start commands saying "do not run" sent to
// one agent (bursts as large); past it the agent's own wait ends the call.
const noStartPerSecond = 20

// routeAccepted answers an agent's accepted report with a start command:
// run for a request still pending on this agent, not run for any other.
func (e *edgeActor) routeAccepted(ctx actor.Context, r wire.Report) {
	a, err := wire.DecodeAccepted(r)
	if err != nil {
		e.log.Warn("dropping malformed accepted report", "err", err)
		return
	}
	p, ok := e.pending[a.RequestID]
	if ok && p.replyTo != nil {
		p.started = true
		e.publishStart(ctx, a.RequestID, true)
		return
	}
	// Not run: a call that moved or ended. The answer only saves the agent
	// its wait, so accepted reports for made-up ids cannot make this node
	// publish without bound.
	if e.noStart == nil {
		e.noStart = rate.New(noStartPerSecond, noStartPerSecond)
	}
	if !e.noStart.Allow(e.opts.Now()) {
		return
	}
	e.log.Info("telling the agent not to run a request no call waits for here", "request_id", a.RequestID)
	e.publishStart(ctx, a.RequestID, false)
}

// publishStart sends the start command off the mailbox. Its outcome does
// not touch the pending request: a start that is lost leaves the agent
// answering not_started when its wait ends.
func (e *edgeActor) publishStart(ctx actor.Context, requestID string, run bool) {
	payload, _ := json.Marshal(wire.StartPayload{Run: run}) // plain struct: always marshals
	b, err := json.Marshal(wire.Command{Command: wire.CmdStart, Payload: payload, RequestID: requestID})
	if err != nil {
		e.log.Error("encode start", "request_id", requestID, "err", err)
		return
	}
	topic, pub, timeout, log := wire.CommandsTopic(e.info.ID), e.opts.Publisher, e.opts.PublishTimeout, e.log
	go func() {
		pctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := pub.Publish(pctx, topic, b); err != nil {
			log.Warn("publish start", "request_id", requestID, "run", run, "err", err)
		}
	}()
}
