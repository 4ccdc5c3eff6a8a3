package edge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// noteProcess returns the proc.WithOnStart hook of a request: it records
// the process group its tool runs in, so that a later start of the agent
// can find what a crash left of it. A failure is logged: the tool runs
// all the same, and dies with the agent anyway where Linux's parent-death
// signal reaches it.
func (a *Agent) noteProcess(ctx context.Context, requestID string) func(pid int) {
	return func(pid int) {
		g, err := proc.GroupOf(pid)
		if err != nil {
			a.log.Warn("identify a tool's process group", "request_id", requestID, "err", err)
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := a.store.NoteRunProcess(wctx, requestID, persistence.RunProcess{Pgid: g.Pgid, StartTicks: g.StartTicks, BootID: g.BootID}); err != nil {
			a.log.Warn("record a tool's process group", "request_id", requestID, "err", err)
		}
	}
}

// auditInterrupted runs when the agent starts, before it takes commands:
// every request an earlier run of the agent began and never finished was
// cut by a crash or a kill. Whatever is left of its tool is killed, and
// it is audited as interrupted, with its report kept for a redelivery, in
// one transaction that happens once per request however often the agent
// restarts.
func (a *Agent) auditInterrupted(ctx context.Context) error {
	runs, err := a.store.InterruptedRuns(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		now := time.Now()
		elapsed, killed := time.Duration(-1), 0
		if r.Process != nil {
			g := proc.Group{Pgid: r.Process.Pgid, StartTicks: r.Process.StartTicks, BootID: r.Process.BootID}
			killed, err = g.KillLeftovers()
			switch {
			case err != nil && !errors.Is(err, errors.ErrUnsupported):
				a.log.Warn("left the processes of a cut run alone", "request_id", r.RequestID, "pgid", g.Pgid, "err", err)
			case killed > 0:
				// It ran until now: that much is known.
				elapsed = now.Sub(r.Started)
				a.log.Warn("killed what a cut run left running", "request_id", r.RequestID, "tool", r.Tool, "pgid", g.Pgid, "processes", killed)
			}
		}
		out := skills.Failed(wire.ErrInterrupted, interruptedText(r, elapsed, killed))
		if elapsed >= 0 {
			out.Elapsed = elapsed
		}
		rec := a.auditRow(r.RequestID, r.ConversationID, r.Tool, r.Params, out)
		rec.Time = now
		var report any = a.wireResult(r.Tool, r.RequestID, out)
		if r.Tool == wire.CmdPrompt {
			report = wire.PromptResult{Status: wire.StatusError, ErrorType: wire.ErrInterrupted, Error: out.ErrorText(),
				RequestID: r.RequestID, AgentID: a.cfg.AgentID, ToolsExecuted: []wire.ToolExecuted{}}
		}
		b, err := a.encodeReport(wire.ReportResult, report)
		if err != nil {
			return fmt.Errorf("encode interrupted report: %w", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = a.store.FinishInterrupted(wctx, rec, r.RequestID, b)
		cancel()
		switch {
		case errors.Is(err, sqlite.ErrNotRunning):
		case err != nil:
			return err
		default:
			a.log.Warn("audited a run cut by a crash as interrupted", "request_id", r.RequestID, "tool", r.Tool,
				"started", r.Started.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// interruptedText is the error message of a run cut by a crash.
func interruptedText(r persistence.InterruptedRun, elapsed time.Duration, killed int) string {
	msg := fmt.Sprintf("the edge agent stopped (crash, kill or power loss) while this request ran; it was started at %s",
		r.Started.UTC().Format(time.RFC3339Nano))
	switch {
	case killed > 0:
		msg += fmt.Sprintf(" and %d of its processes still ran %v later, when the agent started again and killed them", killed, elapsed.Round(time.Millisecond))
	default:
		msg += "; how long it ran is not known"
	}
	return msg + ". It was not run again; it may or may not have taken effect"
}
