package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// ProgressStats counts the progress reports (streamed tool output) the
// edge actors received. The zero value is ready for use; it is safe for
// concurrent use.
type ProgressStats struct {
	// Routed counts reports passed to the tool call waiting for them.
	Routed atomic.Int64
	// Unknown counts reports for a request no tool call waits for (never
	// sent, finished or expired): dropped silently, neither audited nor
	// logged one by one, since an agent can make up any request_id.
	Unknown atomic.Int64
	// Invalid counts reports whose payload did not decode.
	Invalid atomic.Int64
	// RateLimited counts reports dropped by the orchestrator's per-agent
	// bound before they reached an edge actor (orchestrator/node.go).
	RateLimited atomic.Int64
}

// routeProgress passes a chunk of streamed output to the tool call that
// waits for its request, as a *ToolOutput; anything else is dropped and
// counted, never audited, and logged at most every ten seconds per agent.
func (e *edgeActor) routeProgress(ctx actor.Context, r wire.Report) {
	stats := e.opts.Progress
	p, err := wire.DecodeProgress(r)
	if err != nil {
		e.dropProgress(&stats.Invalid, "invalid")
		return
	}
	pend, ok := e.pending[p.RequestID]
	if !ok || pend.replyTo == nil || pend.command != wire.CmdTool {
		e.dropProgress(&stats.Unknown, "unknown request_id")
		return
	}
	stats.Routed.Add(1)
	ctx.Send(pend.replyTo, &ToolOutput{RequestID: p.RequestID, Seq: p.Seq, Output: p.Output})
}

// dropProgress counts a dropped progress report in n and logs the total at
// debug level when the actor's log budget allows.
func (e *edgeActor) dropProgress(n *atomic.Int64, why string) {
	total := n.Add(1)
	if e.dropLog != nil && e.dropLog.Allow(e.opts.Now()) {
		e.log.Debug("dropping progress reports", "why", why, "total", total)
	}
}
