package orchestrator

import (
	"context"
	"log/slog"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
)

// journalDelay is how long after the start of the node the work on the
// journal of its tool runs begins.
const journalDelay = time.Second

// startRunJournal starts the work on the journal of the node's own tool
// runs (actors.RunJournal, the request log of its audit database): first
// the runs an earlier process of the node began and a crash cut are ended
// (what is left of their processes killed) and audited as interrupted,
// then finished runs older than actors.RequestLogKeep are deleted every
// actors.RequestLogPruneEvery. It runs beside the node, journalDelay after
// its start, which does not wait for it: the runs begun since are told
// apart by their ids (actors.OwnRun) and left alone. Close stops it.
func (n *Node) startRunJournal() {
	ctx, cancel := context.WithCancel(context.Background())
	n.journalStop, n.journalDone = cancel, make(chan struct{})
	log := n.log.With("component", "tools")
	go func() {
		defer close(n.journalDone)
		// Off the start's path: the first query opens a reader connection,
		// which parses the schema, on a board with few cores.
		select {
		case <-ctx.Done():
			return
		case <-time.After(journalDelay):
		}
		if err := n.auditInterruptedRuns(ctx, log); err != nil && ctx.Err() == nil {
			log.Error("audit the tool runs a crash cut", "err", err)
		}
		actors.PruneRequestLog(ctx, n.store, 0, log)
	}()
}

// stopRunJournal stops what startRunJournal started and waits for it.
func (n *Node) stopRunJournal() {
	if n.journalDone != nil {
		n.journalStop()
		<-n.journalDone
	}
}

// auditInterruptedRuns audits, once each, the runs of the node's own
// tools that an earlier process began and never finished: each gets a
// tool_calls row (error_type interrupted) after what is left of its
// process group is killed.
func (n *Node) auditInterruptedRuns(ctx context.Context, log *slog.Logger) error {
	runs, err := n.store.InterruptedRuns(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if actors.OwnRun(r.RequestID) {
			continue // begun since this start: it runs now
		}
		now := time.Now()
		elapsed, killed := actors.EndLeftovers(r, now, log)
		out := skills.Failed(wire.ErrInterrupted, actors.InterruptedText("the node", r, elapsed, killed))
		ref := actors.CallRef{Node: n.cfg.NodeID, Side: persistence.SideOrchestrator, ConversationID: r.ConversationID,
			RequestID: r.RequestID, Tool: r.Tool, Params: r.Params}
		if elapsed > 0 {
			ref.Elapsed = elapsed
		}
		if err := actors.RecordInterrupted(ctx, n.store, r, actors.AuditRow(ref, out, now), nil, log); err != nil {
			return err
		}
	}
	return nil
}
