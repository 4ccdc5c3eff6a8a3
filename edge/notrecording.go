package edge

import (
	"context"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// An agent whose audit trail cannot write refuses every command (tool.go)
// and says so in its online status (wire.Status.NotRecording), so that the
// node shows it. The status is published again when the problem appears
// and when it clears: checked at each heartbeat and at once when a command
// is refused for it, and published at most once per notRecordingGap (less
// a tenth: heartbeat ticks that far apart may come a little sooner), so a
// disk that fills and empties again and again sends a status at most that
// often, and the state at the first check after the gap.
const notRecordingGap = 10 * time.Second

// auditProblemNow is AuditProblem bounded for the wire.
func (a *Agent) auditProblemNow() string {
	return wire.BoundText(a.AuditProblem(), wire.MaxNotRecordingLen)
}

// saidNotRecording is what the online status says (or last said) of the
// audit trail: "" when it can write.
func (a *Agent) saidNotRecording() string {
	a.notRecMu.Lock()
	defer a.notRecMu.Unlock()
	return a.notRec
}

// setNotRecording sets what the next online status says.
func (a *Agent) setNotRecording(p string) {
	a.notRecMu.Lock()
	a.notRec = p
	a.notRecMu.Unlock()
}

// kickRecordingCheck asks the presence loop to check the audit trail now
// (a command was refused for it); it never blocks.
func (a *Agent) kickRecordingCheck() {
	select {
	case a.recordingKick <- struct{}{}:
	default:
	}
}

// recordingState follows whether the trail can write, for the presence loop.
type recordingState struct {
	last time.Time // when a status was last published for a change
	gap  time.Duration
}

// check publishes the online status again when whether the trail can write
// changed since the status said it, and the last such status is at least
// gap old. A reason that only changes its words (the free space it names)
// is no change. said reports whether it published.
func (r *recordingState) check(ctx context.Context, a *Agent, now time.Time) (said bool) {
	p := a.auditProblemNow()
	if (p == "") == (a.saidNotRecording() == "") || now.Sub(r.last) < r.gap-r.gap/10 {
		return false
	}
	prev := a.saidNotRecording()
	a.setNotRecording(p)
	if err := a.client.Publish(ctx, a.statusMessage(wire.PresenceOnline)); err != nil {
		a.setNotRecording(prev) // tried again at the next check
		a.log.Log(ctx, unsentLevel(err), "publish online status", "err", err)
		return false
	}
	r.last = now
	if p != "" {
		a.log.Warn("edge agent NOT RECORDING: its online status says so; every command is refused until its audit trail can write",
			"data_dir", a.cfg.DataDir, "err", p)
	} else {
		a.log.Info("edge agent recording again: its online status says so")
	}
	return true
}
