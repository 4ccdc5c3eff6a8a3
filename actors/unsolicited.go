package actors

import (
	"context"
	"encoding/json"
	"time"

	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// Defaults of the bounds on what an agent can make the node store.
const (
	// DefaultEventsPerWindow is how many events of one kind (presence
	// changes, late results) one agent may have stored per
	// DefaultEventWindow; the rest are counted, and the next stored one
	// says how many were left out (detail "suppressed_before").
	DefaultEventsPerWindow = 20
	// DefaultEventWindow is the window of DefaultEventsPerWindow.
	DefaultEventWindow = time.Hour
	// DefaultEventExcerptBytes bounds a late result's excerpt in its event.
	DefaultEventExcerptBytes = 256
)

// detailKeySuppressed is the detail field counting the events of the same
// kind and agent left out since the previous stored one.
const detailKeySuppressed = "suppressed_before"

// NewEventQuota returns the quota EdgeOptions.EventQuota means by default;
// a node shares one with its other paths that audit what agents send.
// Zero arguments take the defaults.
func NewEventQuota(perWindow int, window time.Duration) *rate.Quota {
	if perWindow <= 0 {
		perWindow = DefaultEventsPerWindow
	}
	if window <= 0 {
		window = DefaultEventWindow
	}
	return rate.NewQuota(perWindow, window)
}

// EventQuotaKey is the key of an agent's events of one kind in a quota.
func EventQuotaKey(agentID, kind string) string { return agentID + "/" + kind }

// lateResult audits a report no request waits for: an answer after its
// request timed out, or a made-up request_id. Only a few per agent per
// window are stored, with a short excerpt, and logged; the quota counts the
// rest.
func (e *edgeActor) lateResult(id string, r wire.Report) {
	suppressed, ok := e.admitEvent(EventLateResult)
	if !ok {
		return
	}
	e.log.Warn("dropping report for unknown or expired request_id", "request_id", id, "report_type", r.ReportType)
	detail := map[string]any{"request_id": boundlog.String(id), "report_type": boundlog.String(r.ReportType)}
	if res, err := wire.DecodeToolResult(r); err == nil {
		detail["tool"], detail["status"] = boundlog.String(res.Tool), boundlog.String(res.Status)
		detail["error_type"] = boundlog.String(string(res.ErrorType))
		detail["result_excerpt"] = boundlog.Cut(persistence.Excerpt(res.Result), e.opts.ExcerptBytes)
		detail["result_bytes"] = len(res.Result)
	}
	e.record(EventLateResult, detail, suppressed)
}

// admitEvent asks the quota whether an event of kind about this agent may be
// stored now.
func (e *edgeActor) admitEvent(kind string) (suppressed int, ok bool) {
	if e.opts.Events == nil {
		return 0, false
	}
	return e.opts.EventQuota.Allow(EventQuotaKey(e.info.ID, kind), e.opts.Now())
}

// event audits something about this agent off the mailbox, within the quota.
func (e *edgeActor) event(kind string, detail map[string]any) {
	if suppressed, ok := e.admitEvent(kind); ok {
		e.record(kind, detail, suppressed)
	}
}

// record stores an admitted event off the mailbox.
func (e *edgeActor) record(kind string, detail map[string]any, suppressed int) {
	if suppressed > 0 {
		detail[detailKeySuppressed] = suppressed
	}
	b, err := json.Marshal(detail)
	if err != nil {
		e.log.Error("encode event", "kind", kind, "err", err)
		return
	}
	ev := persistence.Event{Time: e.opts.Now().UTC(), Node: e.opts.Node, AgentID: e.info.ID, Kind: kind, Detail: b}
	events, log := e.opts.Events, e.log
	// One goroutine per admitted event: the quota bounds how many.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultAuditTimeout)
		defer cancel()
		if err := events.RecordEvent(ctx, ev); err != nil {
			log.Error("audit event", "kind", kind, "err", err)
		}
	}()
}
