package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// Defaults of EdgeOptions.
const (
	DefaultHeartbeatTimeout = 90 * time.Second
	DefaultTickInterval     = time.Second
	DefaultPublishTimeout   = 10 * time.Second
	DefaultMailboxSize      = 1024
	DefaultMaxInFlight      = 64 // requests waiting on one agent
	// DefaultToolsListTimeout bounds the wait for an answer to tools_list.
	DefaultToolsListTimeout = 10 * time.Second
	// pendingGrace is how long a pending request outlives its deadline
	// before the edge actor forgets it (its caller has timed out by then).
	pendingGrace = 5 * time.Second
)

// Publisher sends a command to the broker (QoS 1, not retained).
type Publisher interface {
	Publish(ctx context.Context, topic string, payload []byte) error
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, topic string, payload []byte) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, topic string, payload []byte) error {
	return f(ctx, topic, payload)
}

// EdgeOptions configure the edge registry. Publisher is required.
type EdgeOptions struct {
	Publisher Publisher
	// HeartbeatTimeout marks an agent offline when nothing was heard from it
	// for this long (default 90 s: three missed 30 s heartbeats).
	HeartbeatTimeout time.Duration
	// TickInterval is how often agents are checked for expiry (default 1 s).
	TickInterval time.Duration
	// PublishTimeout bounds one command publish (default 10 s).
	PublishTimeout time.Duration
	// MailboxSize bounds each actor's mailbox (default 1024); a full mailbox
	// blocks the sender, which pushes back on the MQTT client.
	MailboxSize int
	// MaxInFlight bounds the requests waiting on one agent (default 64);
	// one more is refused at once with error type "busy", so a saturated
	// agent pushes back on the tool loop instead of queueing without bound.
	MaxInFlight int
	// ToolsListTimeout is how long an agent has to answer tools_list
	// (default 10 s). At most one tools_list per agent is outstanding; one
	// unanswered by then counts as not listed (the agent is still called
	// by action name) and is asked again only if the agent said it
	// (re)connected meanwhile.
	ToolsListTimeout time.Duration
	// Events, when set, records presence changes and late or unknown
	// results (a reply for a request that already timed out), so they are
	// audited rather than only logged. Node names this node in them.
	Events persistence.EventLog
	Node   string
	// Progress counts streamed tool output routed and dropped; nil means
	// counters of the registry's own.
	Progress *ProgressStats
	// EventQuota bounds the events each agent can make Events store, per
	// agent and kind (keys from EventQuotaKey). Nil means NewEventQuota(0, 0).
	EventQuota *rate.Quota
	// ExcerptBytes bounds a late result's excerpt in its event. Zero means
	// DefaultEventExcerptBytes.
	ExcerptBytes int
	Now          func() time.Time
	// Logger gets the registry's lines, which quote what agents send: they
	// are cut and rate-limited through LogLimiter (nil: one of its own).
	Logger     *slog.Logger
	LogLimiter *boundlog.Limiter
}

// EventLateResult is the event kind of a report whose request_id no
// request waits for (it expired, or was never sent): audited, never
// delivered to the loop.
const EventLateResult = "late_result"

func (o *EdgeOptions) fill() {
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.TickInterval <= 0 {
		o.TickInterval = DefaultTickInterval
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = DefaultPublishTimeout
	}
	if o.MailboxSize <= 0 {
		o.MailboxSize = DefaultMailboxSize
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.ToolsListTimeout <= 0 {
		o.ToolsListTimeout = DefaultToolsListTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = &ProgressStats{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LogLimiter == nil {
		o.LogLimiter = boundlog.NewLimiter()
	}
	o.Logger = boundlog.Logger(o.Logger, o.LogLimiter)
	if o.EventQuota == nil {
		o.EventQuota = NewEventQuota(0, 0)
	}
	if o.ExcerptBytes <= 0 {
		o.ExcerptBytes = DefaultEventExcerptBytes
	}
}

// Edges is the handle of a spawned edge registry.
type Edges struct {
	PID    *actor.PID
	cat    *catalogRef
	gauges *gauges
}

// Catalog returns the current snapshot of known agents.
func (e *Edges) Catalog() *Catalog { return e.cat.load() }

// SpawnEdges starts the edge registry under root.
func SpawnEdges(root *actor.RootContext, o EdgeOptions) (*Edges, error) {
	if o.Publisher == nil {
		return nil, fmt.Errorf("spawn edge registry: no publisher")
	}
	o.fill()
	cat := &catalogRef{}
	gs := &gauges{}
	props := actor.PropsFromProducer(func() actor.Actor {
		return &registry{opts: &o, cat: cat, gauges: gs, children: map[string]*actor.PID{}}
	}, actor.WithMailbox(actor.Bounded(o.MailboxSize)))
	pid, err := root.SpawnNamed(props, safeName("", "edges"))
	if err != nil {
		return nil, fmt.Errorf("spawn edge registry: %w", err)
	}
	return &Edges{PID: pid, cat: cat, gauges: gs}, nil
}

type registry struct {
	opts     *EdgeOptions
	cat      *catalogRef
	gauges   *gauges
	children map[string]*actor.PID
}

func (r *registry) Receive(ctx actor.Context) {
	var id string
	switch m := ctx.Message().(type) {
	case *ReportIn:
		id = m.AgentID
	case *StatusIn:
		id = m.AgentID
	case *CapabilitiesIn:
		id = m.AgentID
	case *Dispatch:
		id = m.AgentID
		if _, known := r.children[id]; !known {
			// Never heard of it: do not create an actor for a typo.
			ctx.Send(m.ReplyTo, &DispatchFailed{RequestID: m.Command.RequestID, Type: wire.ErrAgentOffline,
				Err: fmt.Sprintf("edge agent %q is not known to this orchestrator", id)})
			return
		}
	case *CancelDispatch:
		id = m.AgentID
		if _, known := r.children[id]; !known {
			return
		}
	case *actor.Terminated:
		for k, pid := range r.children {
			if pid.Equal(m.Who) {
				delete(r.children, k)
			}
		}
		return
	default:
		return
	}
	pid, ok := r.children[id]
	if !ok {
		if err := wire.ValidateAgentID(id); err != nil {
			r.opts.Logger.Warn("dropping message for invalid agent id", "agent", id, "err", err)
			return
		}
		props := actor.PropsFromProducer(func() actor.Actor {
			return &edgeActor{opts: r.opts, cat: r.cat, info: AgentInfo{ID: id}, pending: map[string]*pending{},
				gauges: r.gauges.of(id)}
		}, actor.WithMailbox(actor.Bounded(r.opts.MailboxSize)))
		var err error
		pid, err = ctx.SpawnNamed(props, safeName(ctx.Self().Id, "edge-"+id))
		if err != nil {
			r.opts.Logger.Error("spawn edge actor", "agent", id, "err", err)
			return
		}
		r.children[id] = pid
	}
	ctx.Forward(pid)
}

type pending struct {
	replyTo  *actor.PID // nil for the actor's own requests (tools_list)
	command  string
	cmd      wire.Command // as sent, to send again after a reconnect
	deadline time.Time
	sent     time.Time
}

// edgeActor tracks one agent: presence, tools, and commands awaiting replies.
type edgeActor struct {
	opts    *EdgeOptions
	cat     *catalogRef
	info    AgentInfo
	pending map[string]*pending
	// toolsReqID is the one outstanding tools_list ("" when none); relist
	// asks for another once it is settled, because the agent said it
	// (re)connected while it was outstanding.
	toolsReqID string
	relist     bool
	// saidOffline: the last status heard said offline, so retained
	// capabilities do not make the agent's presence unknown.
	saidOffline bool
	// unknownSince is when retained capabilities made presence unknown.
	unknownSince time.Time
	seq          int
	stopTick     scheduler.CancelFunc
	log          *slog.Logger
	// dropLog bounds the log lines about dropped progress reports.
	dropLog *rate.Limiter
	// gauges publish how many of pending belong to the tool loop, and
	// when the agent was last heard from.
	gauges *agentGauges
}

func (e *edgeActor) Receive(ctx actor.Context) {
	now := e.opts.Now()
	defer e.publishGauges()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.log = e.opts.Logger.With("agent", e.info.ID)
		e.dropLog = rate.New(0.1, 1)
		e.stopTick = scheduler.NewTimerScheduler(ctx).SendRepeatedly(e.opts.TickInterval, e.opts.TickInterval, ctx.Self(), &tick{})
		e.publishInfo()
	case *actor.Stopping:
		if e.stopTick != nil {
			e.stopTick()
		}
		e.failAll(ctx, wire.ErrAgentOffline, "orchestrator is shutting down")
	case *StatusIn:
		e.info.LastSeen = now
		online := m.Status.Status == wire.PresenceOnline
		e.saidOffline = !online
		if online && e.info.Online {
			// An agent sends online after each (re)connect, once it is
			// subscribed. Heard from before that (a report that overtook
			// it), it may have been asked for tools_list while it could
			// not receive it; or it restarted with other tools. Ask
			// again, once the outstanding tools_list (if any) is settled.
			e.requestTools(ctx, true)
			e.resendPending(ctx, now)
		}
		if !online && e.info.PresenceUnknown {
			e.info.PresenceUnknown = false
			e.publishInfo()
		}
		e.setOnline(ctx, online, "agent reported "+m.Status.Status)
	case *CapabilitiesIn:
		e.info.Capabilities = m.Capabilities
		if !e.info.Online && !e.saidOffline {
			// Retained capabilities, and no status says offline: the
			// agent is known but nothing says whether it is there (the
			// public agent publishes no status; its next heartbeat may be
			// 30 s away). Calls are tried; tools_list probes it, and any
			// answer makes it online.
			e.info.PresenceUnknown = true
			e.unknownSince = now
			e.requestTools(ctx, false)
		}
		e.publishInfo()
	case *ReportIn:
		e.info.LastSeen = now
		e.setOnline(ctx, true, "report received")
		e.route(ctx, m.Report)
	case *Dispatch:
		e.dispatch(ctx, m, now)
	case *CancelDispatch:
		delete(e.pending, m.RequestID)
	case *publishResult:
		if m.err == nil {
			return
		}
		p, ok := e.pending[m.requestID]
		if !ok {
			return
		}
		delete(e.pending, m.requestID)
		if p.replyTo != nil {
			ctx.Send(p.replyTo, &DispatchFailed{RequestID: m.requestID, Type: wire.ErrAgentOffline, Err: m.err.Error(), Transient: true})
		}
	case *tick:
		if e.info.Online && now.Sub(e.info.LastSeen) > e.opts.HeartbeatTimeout {
			e.setOnline(ctx, false, fmt.Sprintf("nothing heard for %s", now.Sub(e.info.LastSeen).Round(time.Second)))
		}
		if e.info.PresenceUnknown && now.Sub(e.unknownSince) > e.opts.HeartbeatTimeout {
			e.info.PresenceUnknown = false
			e.log.Info("edge agent presence", "online", false, "why", "nothing heard since its retained capabilities")
			e.failAll(ctx, wire.ErrAgentOffline, fmt.Sprintf("edge agent %q is offline: nothing heard from it for %s", e.info.ID, e.opts.HeartbeatTimeout))
			e.publishInfo()
		}
		for id, p := range e.pending {
			if id == e.toolsReqID && now.After(p.deadline) {
				// Not answered in time: the agent may not know tools_list
				// (it is still called by action name).
				delete(e.pending, id)
				e.toolsSettled(ctx, false)
				continue
			}
			if now.After(p.deadline.Add(pendingGrace)) {
				delete(e.pending, id)
			}
		}
	}
}

// toolsSettled ends the outstanding tools_list. An answer (a list or an
// error) is at least as new as any (re)connect the agent announced before
// it; one left unanswered may have been sent while the agent could not
// receive it, so it is asked again if the agent announced a (re)connect
// meanwhile.
func (e *edgeActor) toolsSettled(ctx actor.Context, answered bool) {
	e.toolsReqID = ""
	e.info.Listing = false
	e.publishInfo()
	if !answered && e.relist && e.info.Callable() {
		e.requestTools(ctx, false)
	}
	e.relist = false
}

func (e *edgeActor) publishInfo() {
	for {
		old := e.cat.p.Load()
		next := &Catalog{Agents: map[string]AgentInfo{}}
		if old != nil {
			for k, v := range old.Agents {
				next.Agents[k] = v
			}
		}
		next.Agents[e.info.ID] = e.info
		if e.cat.p.CompareAndSwap(old, next) {
			return
		}
	}
}

func (e *edgeActor) setOnline(ctx actor.Context, online bool, why string) {
	if online == e.info.Online {
		return
	}
	e.info.Online = online
	e.info.PresenceUnknown = false
	e.log.Info("edge agent presence", "online", online, "why", why)
	kind := persistence.EventAgentOffline
	if online {
		kind = persistence.EventAgentOnline
	}
	e.event(kind, map[string]any{"why": why})
	if online {
		e.requestTools(ctx, false)
	} else {
		e.info.Tools = nil
		e.failAll(ctx, wire.ErrAgentOffline, fmt.Sprintf("edge agent %q went offline (%s)", e.info.ID, why))
	}
	e.publishInfo()
}

// resendPending sends every awaited command again under its request_id.
// Called when an agent that was online all along says it is online again:
// it reconnected, and a broker that restarted in between kept no session,
// so a command or a result may have been dropped. The agent runs a
// request_id at most once and answers a repeat from its request log.
func (e *edgeActor) resendPending(ctx actor.Context, now time.Time) {
	for id, p := range e.pending {
		if p.replyTo == nil || now.After(p.deadline) {
			continue
		}
		e.log.Info("sending a pending command again after the agent reconnected", "request_id", id)
		e.publish(ctx, p.cmd)
	}
}

func (e *edgeActor) failAll(ctx actor.Context, t wire.ErrorType, msg string) {
	for id, p := range e.pending {
		if p.replyTo != nil {
			ctx.Send(p.replyTo, &DispatchFailed{RequestID: id, Type: t, Err: msg})
		}
		delete(e.pending, id)
	}
	e.toolsReqID = ""
	e.relist = false
	e.info.Listing = false
}

// toolsIDPrefix starts the request_id of every tools_list this
// orchestrator sends to agentID: a reply to one no longer awaited (a
// duplicate delivery, a superseded or timed-out one, or one from before a
// restart of the orchestrator) is recognised and ignored quietly.
func toolsIDPrefix(agentID string) string { return "tools-" + agentID + "-" }

// requestTools asks the agent for its tools unless a tools_list is
// outstanding (at most one is, per agent). reconnected says the agent
// announced a (re)connect: then an outstanding one left unanswered is
// followed by another.
func (e *edgeActor) requestTools(ctx actor.Context, reconnected bool) {
	if e.toolsReqID != "" {
		e.relist = e.relist || reconnected
		return
	}
	e.seq++
	now := e.opts.Now()
	id := fmt.Sprintf("%s%d-%d", toolsIDPrefix(e.info.ID), now.UnixNano(), e.seq)
	cmd := wire.Command{Command: wire.CmdToolsList, Payload: json.RawMessage(`{}`), RequestID: id}
	cmd.SetExpiry(now, e.opts.ToolsListTimeout, 0)
	e.toolsReqID = id
	e.pending[id] = &pending{command: cmd.Command, deadline: now.Add(e.opts.ToolsListTimeout), sent: now}
	e.info.Listing = true
	e.publishInfo()
	e.publish(ctx, cmd)
}

func (e *edgeActor) dispatch(ctx actor.Context, m *Dispatch, now time.Time) {
	if !e.info.Online && !e.info.PresenceUnknown {
		ctx.Send(m.ReplyTo, &DispatchFailed{RequestID: m.Command.RequestID, Type: wire.ErrAgentOffline,
			Err: fmt.Sprintf("edge agent %q is offline", e.info.ID)})
		return
	}
	if _, resend := e.pending[m.Command.RequestID]; !resend && len(e.pending) >= e.opts.MaxInFlight {
		ctx.Send(m.ReplyTo, &DispatchFailed{RequestID: m.Command.RequestID, Type: wire.ErrBusy,
			Err: fmt.Sprintf("edge agent %q is saturated: %d requests already in flight; try again later or use another agent", e.info.ID, len(e.pending))})
		return
	}
	e.pending[m.Command.RequestID] = &pending{replyTo: m.ReplyTo, command: m.Command.Command, cmd: m.Command, deadline: m.Deadline, sent: now}
	e.publish(ctx, m.Command)
}

// publish sends cmd off the mailbox; the outcome comes back as publishResult.
func (e *edgeActor) publish(ctx actor.Context, cmd wire.Command) {
	b, err := json.Marshal(cmd)
	if err != nil {
		ctx.Send(ctx.Self(), &publishResult{requestID: cmd.RequestID, err: fmt.Errorf("marshal command: %w", err)})
		return
	}
	self, sys, topic, pub, timeout := ctx.Self(), ctx.ActorSystem(), wire.CommandsTopic(e.info.ID), e.opts.Publisher, e.opts.PublishTimeout
	go func() {
		pctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := pub.Publish(pctx, topic, b)
		sys.Root.Send(self, &publishResult{requestID: cmd.RequestID, err: err})
	}()
}

// route hands a report to whoever waits for its request_id.
func (e *edgeActor) route(ctx actor.Context, r wire.Report) {
	switch r.ReportType {
	case wire.ReportHeartbeat, wire.ReportMetric:
		return
	case wire.ReportProgress:
		e.routeProgress(ctx, r)
		return
	}
	id := r.RequestID()
	if id == "" {
		id = e.matchUncorrelated(r)
		if id == "" {
			e.log.Warn("dropping report without request_id that matches nothing", "report_type", r.ReportType)
			return
		}
	}
	p, ok := e.pending[id]
	if !ok {
		if strings.HasPrefix(id, toolsIDPrefix(e.info.ID)) {
			// A tools_list reply no longer awaited: nothing to audit.
			e.log.Debug("ignoring a tools_list reply no longer awaited", "request_id", id)
			return
		}
		e.lateResult(id, r)
		return
	}
	delete(e.pending, id)
	if id == e.toolsReqID {
		l, err := wire.DecodeToolsList(r)
		if err != nil {
			// The public agent may not know tools_list: it is called by
			// action name instead (toolbox.go).
			e.log.Info("agent did not list its tools; calls go to it by action name", "err", err)
		} else {
			e.info.Tools, e.info.Listed = l.Tools, true
		}
		e.toolsSettled(ctx, true)
		return
	}
	ctx.Send(p.replyTo, &Reply{RequestID: id, Report: r})
}

// matchUncorrelated pairs a reply that lacks a request_id (the public
// agent's ping answer) with the oldest pending ping; anything else cannot be
// matched and its waiter times out cleanly.
func (e *edgeActor) matchUncorrelated(r wire.Report) string {
	var pong struct {
		Pong bool `json:"pong"`
	}
	if json.Unmarshal(r.Payload, &pong) != nil || !pong.Pong {
		return ""
	}
	best := ""
	var bestAt time.Time
	for id, p := range e.pending {
		if p.command == wire.CmdPing && (best == "" || p.sent.Before(bestAt)) {
			best, bestAt = id, p.sent
		}
	}
	return best
}
