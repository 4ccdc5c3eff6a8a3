package edge

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// clockFloor is the earliest wall-clock time the agent believes. A Raspberry
// Pi has no real-time clock: until NTP has synced it counts from 1970 (or
// from when it was last shut down, with fake-hwclock). A clock before this
// date is taken as unset, and expires_at, which is in the orchestrator's
// clock, is not compared with it; the command's ttl_ms, measured from its
// arrival on the monotonic clock, is used instead. The date is when this
// rule was written: no correctly set clock running this code shows an
// earlier one.
var clockFloor = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// queued is a command waiting in the agent's queue.
type queued struct {
	cmd wire.Command
	// received is when the MQTT handler took the command; it carries Go's
	// monotonic reading, so durations from it ignore wall-clock jumps.
	received time.Time
	// tool is the payload of a tool command, decoded once when a worker
	// takes it (dispatch), with the decoding's error in toolErr: the lanes
	// need its tool and the run its parameters.
	tool    wire.ToolPayload
	toolErr error
}

// expired reports whether q must not start at now, and why. It is checked
// when a worker takes the command, so time spent in the queue counts.
func (a *Agent) expired(q queued, now time.Time) (string, bool) {
	why, expired, unset := commandExpired(q.cmd, q.received, now)
	if unset {
		a.cmdLog.Warn("local clock is not set (before "+clockFloor.Format(time.DateOnly)+"): command expiry judged by ttl_ms from arrival only",
			"request_id", q.cmd.RequestID, "clock", now.UTC().Format(time.RFC3339))
	}
	return why, expired
}

// commandExpired applies the expiry rules; unset reports that the wall clock
// was not trusted. With a set clock, expires_at decides (and ttl_ms from
// arrival when expires_at is absent). With an unset clock, only ttl_ms from
// arrival can: the time the command spent in transit is then not counted.
// A command with neither field never expires.
func commandExpired(cmd wire.Command, received, now time.Time) (why string, expired, unset bool) {
	if cmd.ExpiresAt == 0 && cmd.TTLMS == 0 {
		return "", false, false
	}
	unset = now.Before(clockFloor)
	if !unset && cmd.ExpiresAt > 0 {
		if late := now.UnixMilli() - cmd.ExpiresAt; late > 0 {
			return fmt.Sprintf("command %s expired at %s, %v before this agent took it (agent clock %s)", cmd.RequestID,
				time.UnixMilli(cmd.ExpiresAt).UTC().Format(time.RFC3339Nano), time.Duration(late)*time.Millisecond,
				now.UTC().Format(time.RFC3339Nano)), true, false
		}
		return "", false, false
	}
	// A lifetime past what a Duration holds (292 years) is none: it
	// wrapped to a negative one, and refused the command at once.
	if cmd.TTLMS > 0 && cmd.TTLMS <= math.MaxInt64/int64(time.Millisecond) {
		ttl := time.Duration(cmd.TTLMS) * time.Millisecond
		if waited := now.Sub(received); waited > ttl {
			return fmt.Sprintf("command %s waited %v on this agent, longer than its lifetime of %v", cmd.RequestID,
				waited.Round(time.Millisecond), ttl), true, unset
		}
	}
	return "", false, unset
}

// rejectExpired answers an expired command with an "expired" error and
// audits it: a tool command gets a tool_calls row (status error, error type
// expired) and a tool result report, as a failed run would; any other
// command gets an error report and a log line.
func (a *Agent) rejectExpired(ctx context.Context, cmd wire.Command, why string) {
	a.failed.Add(1)
	a.cmdLog.Warn("refusing expired command", "command", cmd.Command, "request_id", cmd.RequestID, "reason", why)
	if cmd.Command != wire.CmdTool {
		a.replyError(ctx, cmd.RequestID, wire.ErrExpired, why)
		return
	}
	p, _ := wire.DecodeToolPayload(cmd.Payload) // best effort: the row names the tool when it can
	out := skills.Failed(wire.ErrExpired, why)
	a.auditRun(ctx, a.auditRow(cmd.RequestID, p.ConversationID, p.Tool, nil, out), cmd.RequestID, nil)
	a.reply(ctx, wire.ReportResult, a.wireResult(p.Tool, cmd.RequestID, out))
}
