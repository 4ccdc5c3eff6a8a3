package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// RunJournal is a request log that records the runs of local tools
// (sqlite.Store is one). With one, LocalTools records each run before it
// starts, and the process group its tool runs in, and the run's audit
// row marks it done (persistence.ToolCall.FinishesRun) in its own
// transaction. What a crash cut stays running there: the next start
// kills what is left of it and audits it as interrupted (EndLeftovers).
type RunJournal interface {
	// BeginRun records requestID as running run; a request seen before
	// keeps its state (RequestDone: its record was written already).
	BeginRun(ctx context.Context, requestID string, run persistence.Run) (persistence.RequestState, []byte, error)
	// NoteRunProcess records the process group of a running request.
	NoteRunProcess(ctx context.Context, requestID string, p persistence.RunProcess) error
}

// runPrefix begins the journal request id of every run this process
// begins: "run-" and 16 random hex digits drawn at start, so that a run
// of this process is never taken for one an earlier process left
// (OwnRun), whatever the clock did in between.
var runPrefix = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux
	return "run-" + hex.EncodeToString(b[:])
}()

// OwnRun reports whether id is a run this process began: a running one
// is going now, not cut by a crash. The work on a journal after a start
// skips them.
func OwnRun(id string) bool {
	return strings.HasPrefix(id, runPrefix+"-")
}

// runID returns the journal request a run of t is recorded under, or ""
// when t is not a local tool with a journal.
func (t Target) runID(o *ConvOptions) string {
	if t.Local == nil || t.Journal == nil || o.Audit == nil {
		return "" // without an audit row to end it, a run would stay running
	}
	return RequestID(runPrefix, o.RequestTag, o.Now().UnixNano(), requestSeq.Add(1))
}

// journalTimeout bounds one write to a RunJournal.
const journalTimeout = 10 * time.Second

// NoteProcess returns the proc.WithOnStart hook of a run: it records the
// process group the run's tool starts in, so that a later start can find
// what a crash left of it. A failure is logged: the tool runs all the
// same, and dies with its process anyway where Linux's parent-death
// signal reaches it.
func NoteProcess(ctx context.Context, j RunJournal, requestID string, log *slog.Logger) func(pid int) {
	return func(pid int) {
		g, err := proc.GroupOf(pid)
		if err != nil {
			log.Warn("identify a tool's process group", "request_id", requestID, "err", err)
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalTimeout)
		defer cancel()
		if err := j.NoteRunProcess(wctx, requestID, persistence.RunProcess{Pgid: g.Pgid, StartTicks: g.StartTicks, BootID: g.BootID}); err != nil {
			log.Warn("record a tool's process group", "request_id", requestID, "err", err)
		}
	}
}

// EndLeftovers kills what still runs in the process group of r, a run a
// crash cut, and returns how many processes it killed and, when it killed
// any, how long the run was provably alive (else -1). A group id that now
// names other processes is left alone and logged.
func EndLeftovers(r persistence.InterruptedRun, now time.Time, log *slog.Logger) (elapsed time.Duration, killed int) {
	if r.Process == nil {
		return -1, 0
	}
	g := proc.Group{Pgid: r.Process.Pgid, StartTicks: r.Process.StartTicks, BootID: r.Process.BootID}
	killed, err := g.KillLeftovers()
	switch {
	case err != nil && !errors.Is(err, errors.ErrUnsupported):
		log.Warn("left the processes of a cut run alone", "request_id", r.RequestID, "pgid", g.Pgid, "err", err)
	case killed > 0:
		log.Warn("killed what a cut run left running", "request_id", r.RequestID, "tool", r.Tool, "pgid", g.Pgid, "processes", killed)
		return now.Sub(r.Started), killed
	}
	return -1, killed
}

// InterruptedText is the error of a run a crash cut, audited at the next
// start of who ("the edge agent", "the node"); elapsed and killed are
// EndLeftovers'.
func InterruptedText(who string, r persistence.InterruptedRun, elapsed time.Duration, killed int) string {
	msg := fmt.Sprintf("%s stopped (crash, kill or power loss) while this request ran; it was started at %s",
		who, r.Started.UTC().Format(time.RFC3339Nano))
	switch {
	case killed > 0:
		msg += fmt.Sprintf(" and %d of its processes still ran %v later, when %s started again and killed them", killed, elapsed.Round(time.Millisecond), who)
	default:
		msg += "; how long it ran is not known"
	}
	return msg + ". It was not run again; it may or may not have taken effect"
}

// InterruptedFinisher ends a request a crash cut with its audit row, once
// (sqlite.Store is one).
type InterruptedFinisher interface {
	// FinishInterrupted records c and stores report as requestID's
	// result in one transaction, or returns persistence.ErrNotRunning
	// when the request is no longer running.
	FinishInterrupted(ctx context.Context, c persistence.ToolCall, requestID string, report []byte) error
}

// RecordInterrupted audits r, a run a crash cut, with rec and ends it with
// report (nil: none), and logs it; a run another start ended already is
// left alone.
func RecordInterrupted(ctx context.Context, f InterruptedFinisher, r persistence.InterruptedRun, rec persistence.ToolCall, report []byte, log *slog.Logger) error {
	wctx, cancel := context.WithTimeout(ctx, journalTimeout)
	defer cancel()
	err := f.FinishInterrupted(wctx, rec, r.RequestID, report)
	switch {
	case errors.Is(err, persistence.ErrNotRunning):
	case err != nil:
		return err
	default:
		log.Warn("audited a run cut by a crash as interrupted", "request_id", r.RequestID, "tool", r.Tool,
			"started", r.Started.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// RequestLogPruner deletes finished requests (sqlite.Store is one).
type RequestLogPruner interface {
	PruneRequests(ctx context.Context, olderThan time.Time) (int64, error)
}

// How long a request log remembers a finished request. A redelivered
// command (a broker's, or the orchestrator's repeat of a call after a
// reconnect or a move to another node) comes within the call's deadline,
// at most the largest category timeout (10 minutes) plus its slack;
// RequestLogKeep is several times that. Deleting older rows bounds the
// log, whose rows keep each report whole: without it a database grew with
// every call ever run.
const (
	RequestLogKeep = time.Hour
	// RequestLogPruneEvery is how often PruneRequestLog deletes.
	RequestLogPruneEvery = 10 * time.Minute
)

// PruneRequestLog deletes the finished requests older than RequestLogKeep
// at once and then every interval (RequestLogPruneEvery when not
// positive), until ctx ends. Running requests are kept. A pass with
// nothing to delete writes nothing.
func PruneRequestLog(ctx context.Context, p RequestLogPruner, every time.Duration, log *slog.Logger) {
	if every <= 0 {
		every = RequestLogPruneEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := p.PruneRequests(ctx, time.Now().Add(-RequestLogKeep))
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("delete old requests from the request log", "err", err)
		case n > 0:
			log.Debug("deleted old requests from the request log", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
