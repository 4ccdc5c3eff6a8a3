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

	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// pending is a command awaiting its reply.
type pending struct {
	replyTo  *actor.PID // nil for the actor's own requests (tools_list)
	command  string
	cmd      wire.Command // as sent, to send again after a reconnect
	deadline time.Time
	sent     time.Time
	// gated: the command asks for the start gate; started: the agent was
	// told to run it, so it is never moved (startgate.go).
	gated, started bool
}

// edgeActor tracks one agent: presence, tools, and commands awaiting replies.
type edgeActor struct {
	opts    *EdgeOptions
	cat     *catalogRef
	info    AgentInfo
	pending map[string]*pending
	// settled are the reports lately handed to a waiter or audited as
	// late: one delivered again is dropped, not audited as late.
	settled recentReports
	// toolsReqID is the one awaited tools_list ("" when none).
	// toolsRetry, set while the agent has announced a (re)connect since
	// that tools_list was sent, cancels the timer that asks again
	// (toolsRetryMsg): it was sent while the agent may not have been
	// subscribed to its commands, and so may be lost.
	toolsReqID string
	toolsRetry scheduler.CancelFunc
	timers     *scheduler.TimerScheduler
	// lastResend is when awaited commands were last sent again on a
	// reconnect; resendTimer, set while one is put off (resend.go).
	lastResend  time.Time
	resendTimer scheduler.CancelFunc
	// saidOffline: the last status heard said offline, so retained
	// capabilities do not make the agent's presence unknown.
	saidOffline bool
	// unknownSince is when retained capabilities made presence unknown.
	unknownSince time.Time
	seq          int
	stopTick     func()
	log          *slog.Logger
	// dropLog bounds the log lines about dropped progress reports.
	dropLog *rate.Limiter
	// noStart bounds the "do not run" starts sent (startgate.go).
	noStart *rate.Limiter
	// gauges publish how many of pending belong to the tool loop, and
	// when the agent was last heard from.
	gauges *agentGauges
	// said is the host and version of the last online status; recorded,
	// the origin the last agent_online event gave (agentorigin.go);
	// quotaReached, that the last stored agent_online said the quota left
	// out the next ones.
	said, recorded agentOrigin
	quotaReached   bool
}

func (e *edgeActor) Receive(ctx actor.Context) {
	now := e.opts.Now()
	defer e.publishGauges()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.log = e.opts.Logger.With("agent", e.info.ID)
		e.dropLog = rate.New(0.1, 1)
		e.timers = scheduler.NewTimerScheduler(ctx)
		e.stopTick = sendEvery(ctx.ActorSystem().Root, e.opts.TickInterval, ctx.Self(), &tick{})
		e.publishInfo()
	case *actor.Stopping:
		if e.stopTick != nil {
			e.stopTick()
		}
		e.cancelToolsRetry()
		e.cancelResend()
		e.failAll(ctx, wire.ErrAgentOffline, "orchestrator is shutting down")
	case *StatusIn:
		e.info.LastSeen = now
		online := m.Status.Status == wire.PresenceOnline
		e.saidOffline = !online
		// What a status says of the agent's host holds for its
		// connection: an offline status (its last will) ends it. Nothing
		// heard for the heartbeat timeout does not: the next report may
		// come over the same connection.
		e.said = agentOrigin{}
		if online {
			e.said = agentOrigin{host: string(m.Status.Host), version: string(m.Status.Version), notRecording: string(m.Status.NotRecording)}
		}
		e.noteRecording(online)
		if online && e.info.StartGate != m.Status.HasFeature(wire.FeatureStartGate) {
			e.info.StartGate = !e.info.StartGate
			e.publishInfo()
		}
		if online {
			// An agent sends online after each (re)connect, once it is
			// subscribed to its commands. Heard from before that (a
			// report that overtook it: a heartbeat, or a publish its
			// MQTT client resends on reconnect), it was asked for
			// tools_list while it could not receive it; or it restarted
			// with other tools. An awaited tools_list gets
			// ToolsListRetry to be answered, then is asked again; with
			// none awaited, an agent online all along is asked now (one
			// coming online is asked by setOnline).
			if e.toolsReqID != "" {
				e.armToolsRetry(ctx)
			} else if e.info.Online {
				e.requestTools(ctx)
			}
			if e.info.Online {
				e.resendOnReconnect(ctx, now)
				e.originChanged()
			}
		}
		if !online && e.info.PresenceUnknown {
			e.info.PresenceUnknown = false
			e.publishInfo()
		}
		e.setOnline(ctx, online, "agent reported "+m.Status.Status)
	case *resendDue:
		e.resendTimerDue(ctx, now)
	case *ResendPending:
		e.resendPending(ctx, now, "a cluster node left: a report relayed through it may be lost")
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
			e.requestTools(ctx)
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
	case *toolsRetryMsg:
		e.retryTools(ctx, m.requestID)
	case *publishResult:
		if m.err == nil {
			return
		}
		p, ok := e.pending[m.requestID]
		if !ok || p.started {
			// A started command reached the agent, whatever the
			// publish says: the agent accepted it.
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

// toolsSettled ends the awaited tools_list. An answer (a list or an
// error) is at least as new as any (re)connect the agent announced before
// it; one left unanswered may have been sent while the agent could not
// receive it, so it is asked again if the agent announced a (re)connect
// meanwhile (when ToolsListTimeout is not longer than ToolsListRetry, the
// timeout comes first).
func (e *edgeActor) toolsSettled(ctx actor.Context, answered bool) {
	announced := e.toolsRetry != nil
	e.cancelToolsRetry()
	e.toolsReqID = ""
	e.info.Listing = false
	e.publishInfo()
	if !answered && announced && e.info.Callable() {
		e.requestTools(ctx)
	}
}

// toolsRetryMsg asks the edge actor to retry the tools_list requestID if
// it is still unanswered.
type toolsRetryMsg struct{ requestID string }

// armToolsRetry gives the awaited tools_list ToolsListRetry from now, the
// agent's announcement that it is subscribed, to be answered. One timer at
// a time: announcements meanwhile do not postpone it.
func (e *edgeActor) armToolsRetry(ctx actor.Context) {
	if e.toolsRetry != nil {
		return
	}
	e.toolsRetry = e.timers.SendOnce(e.opts.ToolsListRetry, ctx.Self(), &toolsRetryMsg{requestID: e.toolsReqID})
}

func (e *edgeActor) cancelToolsRetry() {
	if e.toolsRetry != nil {
		e.toolsRetry()
		e.toolsRetry = nil
	}
}

// retryTools replaces the tools_list requestID, unanswered ToolsListRetry
// after the agent said it was subscribed, with a new one: that one was
// lost (sent before the agent re-subscribed, and a clean session keeps
// nothing for it), or its answer is slow and the next answer will do. A
// reply to the replaced one is ignored quietly. The new one is sent after
// the announcement, so it is not retried before ToolsListTimeout: at most
// one retry per (re)connect the agent announces.
func (e *edgeActor) retryTools(ctx actor.Context, requestID string) {
	if requestID != e.toolsReqID || e.toolsRetry == nil {
		return // answered, timed out or failed meanwhile
	}
	e.toolsRetry = nil
	e.log.Info("tools_list unanswered since the agent said it is subscribed; asking again",
		"request_id", requestID, "waited", e.opts.ToolsListRetry)
	delete(e.pending, requestID)
	e.toolsReqID = ""
	e.info.Listing = false
	if e.info.Callable() {
		e.requestTools(ctx)
		return
	}
	e.publishInfo()
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
	if online {
		e.onlineEvent(why)
	} else {
		e.event(persistence.EventAgentOffline, map[string]any{"why": why})
	}
	if online {
		e.requestTools(ctx)
	} else {
		e.info.Tools = nil
		e.failAll(ctx, wire.ErrAgentOffline, fmt.Sprintf("edge agent %q went offline (%s)", e.info.ID, why))
	}
	e.publishInfo()
}

// resendPending sends every awaited command again under its request_id.
// Called when an agent that was online all along says it is online again
// (it reconnected, and a broker that restarted in between kept no
// session, so a command or a result may have been dropped), and in a
// cluster when another node left (ResendPending). The agent runs a
// request_id at most once and answers a repeat from its request log.
func (e *edgeActor) resendPending(ctx actor.Context, now time.Time, why string) {
	for id, p := range e.pending {
		if p.replyTo == nil || now.After(p.deadline) {
			continue
		}
		e.log.Info("sending a pending command again", "request_id", id, "why", why)
		e.publish(ctx, p.cmd)
	}
}

func (e *edgeActor) failAll(ctx actor.Context, t wire.ErrorType, msg string) {
	for id, p := range e.pending {
		if p.replyTo != nil {
			ctx.Send(p.replyTo, &DispatchFailed{RequestID: id, Type: t, Err: msg, Movable: p.gated && !p.started})
		}
		delete(e.pending, id)
	}
	e.toolsReqID = ""
	e.cancelToolsRetry()
	e.info.Listing = false
}

// toolsIDPrefix starts the request_id of every tools_list this
// orchestrator sends to agentID: a reply to one no longer awaited (a
// duplicate delivery, a superseded or timed-out one, or one from before a
// restart of the orchestrator) is recognised and ignored quietly.
func toolsIDPrefix(agentID string) string { return "tools-" + agentID + "-" }

// IsToolsListID says whether requestID is one of this orchestrator's
// tools_list requests to agentID (whose answers concern no tool call).
func IsToolsListID(agentID, requestID string) bool {
	return strings.HasPrefix(requestID, toolsIDPrefix(agentID))
}

// requestTools asks the agent for its tools unless a tools_list is
// awaited (at most one is, per agent).
func (e *edgeActor) requestTools(ctx actor.Context) {
	if e.toolsReqID != "" {
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
			Err: fmt.Sprintf("edge agent %q is offline", e.info.ID), Movable: !m.Started})
		return
	}
	old, resend := e.pending[m.Command.RequestID]
	if !resend && len(e.pending) >= e.opts.MaxInFlight {
		ctx.Send(m.ReplyTo, &DispatchFailed{RequestID: m.Command.RequestID, Type: wire.ErrBusy,
			Err:     fmt.Sprintf("edge agent %q is saturated: %d requests already in flight; try again later or use another agent", e.info.ID, len(e.pending)),
			Movable: !m.Started})
		return
	}
	p := &pending{replyTo: m.ReplyTo, command: m.Command.Command, cmd: m.Command, deadline: m.Deadline, sent: now, gated: m.Gated,
		started: m.Started}
	if resend && old.started {
		p.started = true // once told to run, never moved
	}
	e.pending[m.Command.RequestID] = p
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
	hot.Go(func() {
		pctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := pub.Publish(pctx, topic, b)
		sys.Root.Send(self, &publishResult{requestID: cmd.RequestID, err: err})
	})
}

// route hands a report to whoever waits for its request_id.
func (e *edgeActor) route(ctx actor.Context, r wire.Report) {
	switch r.ReportType {
	case wire.ReportHeartbeat, wire.ReportMetric:
		return
	case wire.ReportProgress:
		e.routeProgress(ctx, r)
		return
	case wire.ReportAccepted:
		e.routeAccepted(ctx, r)
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
		if e.settled.seen(id, r.ReportType) {
			// Delivered again (QoS 1, or an outbox copy of a publish
			// the agent's client also resent): settled already.
			e.log.Debug("ignoring a report delivered again", "request_id", id, "report_type", r.ReportType)
			return
		}
		e.settled.add(id, r.ReportType)
		e.lateResult(id, r)
		return
	}
	delete(e.pending, id)
	e.settled.add(id, r.ReportType)
	if id == e.toolsReqID {
		l, err := wire.DecodeToolsList(r)
		if err != nil {
			// The public agent may not know tools_list: it is called by
			// action name instead (toolbox.go).
			e.log.Info("agent did not list its tools; calls go to it by action name", "err", err)
		} else {
			tools, cut := boundTools(l.Tools)
			if cut != "" {
				e.log.Warn("agent's tools list over the node's bounds: "+cut, "listed", len(l.Tools), "kept", len(tools))
			}
			e.info.Tools, e.info.Listed = tools, true
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
