package edge

import (
	"context"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

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
		if actors.OwnRun(r.RequestID) {
			continue // a prompt's run begun since this start
		}
		now := time.Now()
		elapsed, killed := actors.EndLeftovers(r, now, a.log)
		out := skills.Failed(wire.ErrInterrupted, actors.InterruptedText("the edge agent", r, elapsed, killed))
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
		if err := actors.RecordInterrupted(ctx, a.store, r, rec, b, a.log); err != nil {
			return err
		}
	}
	return nil
}
