package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ResendPending asks every edge actor to send its awaited commands again
// under their request_ids. A clustered node sends it when another node
// leaves the cluster: the broker hands each report to one node, which
// relays it to the node whose call it answers, so a report taken by a
// node that died before relaying it is lost with that node. The agent
// runs a request_id at most once and answers a repeat from its request
// log (a finished call's result again; nothing for a running one, whose
// report is still to come), so resending is safe and recovers the lost
// report before the call's deadline.
type ResendPending struct{}

// resendGap is the least time between two resends of an agent's awaited
// commands on its announcements that it is online again. An agent says so
// once per (re)connect, but any client with its identity can say it as
// often as it likes, and each time every command awaited from it was sent
// again: 7,400 statuses in ten seconds made a node publish 81,000
// commands, which took every message id of its MQTT session (its commands
// to every other agent failed: "no message IDs available") and 900 MB.
const resendGap = time.Second

// resendDue is the timer's message of a resend put off by resendGap.
type resendDue struct{}

// resendOnReconnect sends the awaited commands again for an agent that
// announced a (re)connect: now, or, within resendGap of the last resend,
// once the gap is over. Either way the resend follows the announcement,
// which is what makes it recover a command lost by the reconnect.
func (e *edgeActor) resendOnReconnect(ctx actor.Context, now time.Time) {
	if e.resendTimer != nil {
		return // one is due after this announcement already
	}
	if wait := e.lastResend.Add(resendGap).Sub(now); wait > 0 {
		e.resendTimer = e.timers.SendOnce(wait, ctx.Self(), &resendDue{})
		return
	}
	e.lastResend = now
	e.resendPending(ctx, now, "the agent reconnected")
}

// resendTimerDue runs the resend resendOnReconnect put off.
func (e *edgeActor) resendTimerDue(ctx actor.Context, now time.Time) {
	e.resendTimer = nil
	e.lastResend = now
	e.resendPending(ctx, now, "the agent reconnected")
}

// cancelResend stops a resend put off (the actor stops).
func (e *edgeActor) cancelResend() {
	if e.resendTimer != nil {
		e.resendTimer()
		e.resendTimer = nil
	}
}
