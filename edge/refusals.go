package edge

import (
	"context"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// The MQTT handler refuses some commands itself (malformed, or the queue is
// full) and never answers them itself: paho reads the broker's
// acknowledgements on the goroutine that hands the handler its messages,
// so a handler waiting for the ack of its own answer waited, whenever the
// next command had already arrived, until its publish timed out (10 s), and
// with it every command and every report of the agent. 300 pings sent at
// once were all answered only after 10.2 s, five reports going through the
// outbox. The handler now hands refusals to sendRefusals, through a queue
// bounded like the command queue.

// maxRefusals bounds the refusals waiting to be audited and answered; past
// it a refusal is dropped (logged, rate-limited), and its sender's own
// wait ends at its timeout. Each holds at most about 1 KB; a burst of 300
// commands overflowing the queue (answered at the broker's pace, one ack
// at a time) lost a third of its answers at 64.
const maxRefusals = 1024

// refusal is the answer to a command the MQTT handler refused, and the
// audit event to record about it.
type refusal struct {
	requestID string // "" when it could not be read: nothing is answered
	errType   wire.ErrorType
	msg       string
	event     string // kind of the event to audit first; "" for none
	detail    map[string]any
}

// refuse queues r for sendRefusals without waiting.
func (a *Agent) refuse(r refusal) {
	select {
	case a.refusals <- r:
	default:
		a.cmdLog.Warn("dropping the answer to a refused command: too many refusals waiting",
			"request_id", r.requestID, "waiting", cap(a.refusals))
	}
}

// sendRefusals audits and answers queued refusals, one at a time, until ctx
// ends.
func (a *Agent) sendRefusals(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-a.refusals:
			if r.event != "" {
				a.audit(r.event, r.detail)
			}
			if r.requestID != "" {
				a.replyError(ctx, r.requestID, r.errType, r.msg)
			}
		}
	}
}
