//go:build !nocluster

package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/scheduler"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// An edge agent is a cluster identity too: a grain of kind "agent",
// placed by disthash on one member, holds every call to the agent from
// every node. The nodes' edge registries send their calls to their own
// call router, which places each at the agent's grain; the grain hands
// it to its node's edge actor of the agent, which sends the command,
// keeps it pending (one in-flight limit for the cluster) and answers the
// grain, which answers the calling node's router, which answers the
// tool call. Reports answering a call are relayed to the agent's owner
// (cluster_reports.go). When the membership changes, each router places
// again the calls whose agent moved, under the same request_id: the new
// owner sends the command again and the agent, which runs a request_id
// at most once, answers a repeat from its request log.

const (
	// agentKind is the cluster kind of an edge agent.
	agentKind = "agent"
	// callRouterName is the call router on every clustered node.
	callRouterName = "evoclaw-agent-calls"
	// callSweep is how often routers and grains forget calls past their
	// deadline (plus grace) that nobody answered.
	callSweep = 5 * time.Second
	// callGrace is how long a call outlives its deadline in a router or a
	// grain: its tool call has timed out by then.
	callGrace = 10 * time.Second
	// maxCallEnvelope bounds one call message between nodes: a command or
	// a report (at most wire.MaxMessageBytes) and its framing.
	maxCallEnvelope = wire.MaxMessageBytes + 16<<10
)

// The call envelope ops.
const (
	opDispatch   = "dispatch"
	opCancelCall = "cancel_call"
	opReply      = "reply"
	opFailed     = "failed"
	opOutput     = "output"
)

// callEnvelope is a call message between a node's router and an agent's
// grain on another node, as JSON in a protobuf BytesValue.
type callEnvelope struct {
	Op    string `json:"op"`
	Agent string `json:"agent"`
	// Req is the call's request_id.
	Req string `json:"req"`
	// Dispatch: the command, its deadline, the start gate, and the
	// calling node's router address.
	Command    *wire.Command `json:"command,omitempty"`
	DeadlineMS int64         `json:"deadline_ms,omitempty"`
	Gated      bool          `json:"gated,omitempty"`
	Started    bool          `json:"started,omitempty"`
	ReplyAddr  string        `json:"reply_addr,omitempty"`
	// Reply: the agent's report.
	Report *wire.Report `json:"report,omitempty"`
	// Failed: why the command was not delivered or was abandoned.
	Failed *callFailure `json:"failed,omitempty"`
	// Output: one chunk of streamed output.
	Seq    int64  `json:"seq,omitempty"`
	Output string `json:"output,omitempty"`
}

// callFailure is actors.DispatchFailed on the wire between nodes.
type callFailure struct {
	Type      wire.ErrorType `json:"type"`
	Err       string         `json:"err"`
	Transient bool           `json:"transient,omitempty"`
	Movable   bool           `json:"movable,omitempty"`
}

// decodeCallEnvelope parses a call message from another node: bounded,
// a valid agent id and request_id, the fields its op needs.
func decodeCallEnvelope(b []byte) (*callEnvelope, error) {
	if len(b) > maxCallEnvelope {
		return nil, fmt.Errorf("cluster call message of %d bytes, at most %d", len(b), maxCallEnvelope)
	}
	var e callEnvelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("cluster call message: %w", err)
	}
	if err := wire.ValidateAgentID(e.Agent); err != nil {
		return nil, fmt.Errorf("cluster call message: %w", err)
	}
	if e.Req == "" || len(e.Req) > 256 {
		return nil, errors.New("cluster call message: req: want 1-256 characters")
	}
	switch e.Op {
	case opDispatch:
		if e.Command == nil || e.Command.RequestID != e.Req || e.ReplyAddr == "" || e.DeadlineMS <= 0 {
			return nil, errors.New("cluster call message: dispatch without its command, deadline or reply address")
		}
	case opCancelCall, opOutput:
	case opReply:
		if e.Report == nil {
			return nil, errors.New("cluster call message: reply without its report")
		}
	case opFailed:
		if e.Failed == nil {
			return nil, errors.New("cluster call message: failed without its failure")
		}
	default:
		return nil, fmt.Errorf("cluster call message: unknown op %.20q", e.Op)
	}
	return &e, nil
}

func (e *callEnvelope) message() *wrapperspb.BytesValue {
	b, _ := json.Marshal(e) // only marshalable types
	return wrapperspb.Bytes(b)
}

// replyEnvelope encodes what an edge actor answered a call with; ok is
// false for any other message.
func replyEnvelope(agent string, m any) (e *callEnvelope, final, ok bool) {
	switch m := m.(type) {
	case *actors.Reply:
		r := m.Report
		return &callEnvelope{Op: opReply, Agent: agent, Req: m.RequestID, Report: &r}, true, true
	case *actors.DispatchFailed:
		return &callEnvelope{Op: opFailed, Agent: agent, Req: m.RequestID,
			Failed: &callFailure{Type: m.Type, Err: m.Err, Transient: m.Transient, Movable: m.Movable}}, true, true
	case *actors.ToolOutput:
		return &callEnvelope{Op: opOutput, Agent: agent, Req: m.RequestID, Seq: m.Seq, Output: m.Output}, false, true
	}
	return nil, false, false
}

// answer turns a reply envelope back into the edge actor's message.
func (e *callEnvelope) answer() (msg any, final bool) {
	switch e.Op {
	case opReply:
		return &actors.Reply{RequestID: e.Req, Report: *e.Report}, true
	case opFailed:
		f := e.Failed
		return &actors.DispatchFailed{RequestID: e.Req, Type: f.Type, Err: f.Err, Transient: f.Transient, Movable: f.Movable}, true
	case opOutput:
		return &actors.ToolOutput{RequestID: e.Req, Seq: e.Seq, Output: e.Output}, false
	}
	return nil, false
}

// agentGrainKind is the grain of an edge agent on the member that owns
// it.
func (n *Node) agentGrainKind() *pcluster.Kind {
	return pcluster.NewKind(agentKind, actor.PropsFromProducer(func() actor.Actor {
		return &agentGrain{n: n, callers: map[string]grainCall{}}
	}))
}

// grainCall is a call an agent's grain holds: who to answer and until
// when.
type grainCall struct {
	router   *actor.PID
	deadline time.Time
}

// agentGrain is one edge agent's cluster identity on the node that owns
// it: the calls of every node to the agent go through it to this node's
// edge actor of the agent.
type agentGrain struct {
	n       *Node
	id      string
	callers map[string]grainCall // request_id -> the calling node's router
	stop    scheduler.CancelFunc
}

func (g *agentGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pcluster.ClusterInit:
		g.id = m.Identity.Identity
		g.stop = scheduler.NewTimerScheduler(ctx).SendRepeatedly(callSweep, callSweep, ctx.Self(), &sweepCalls{})
	case *actor.Stopping:
		if g.stop != nil {
			g.stop()
		}
		// The agent moved to another node (or this one stops): its calls
		// here are forgotten; their routers place them on the new owner.
		for req := range g.callers {
			ctx.Send(g.n.edges.PID, &actors.CancelDispatch{AgentID: g.id, RequestID: req, Placed: true})
		}
		g.callers = map[string]grainCall{}
	case *sweepCalls:
		now := time.Now()
		for req, c := range g.callers {
			if now.After(c.deadline.Add(callGrace)) {
				delete(g.callers, req)
			}
		}
	case *actors.Dispatch:
		g.dispatch(ctx, m.Command, m.Deadline, m.Gated, m.Started, m.ReplyTo)
	case *actors.CancelDispatch:
		g.cancel(ctx, m.RequestID)
	case *wrapperspb.BytesValue:
		e, err := decodeCallEnvelope(m.Value)
		if err != nil || e.Agent != g.id {
			g.n.log.Warn("dropping cluster call message", "agent", g.id, "err", err)
			return
		}
		switch e.Op {
		case opDispatch:
			g.dispatch(ctx, *e.Command, time.UnixMilli(e.DeadlineMS), e.Gated, e.Started, actor.NewPID(e.ReplyAddr, callRouterName))
		case opCancelCall:
			g.cancel(ctx, e.Req)
		}
	default:
		e, final, ok := replyEnvelope(g.id, m)
		if !ok {
			return
		}
		c, held := g.callers[e.Req]
		if !held {
			return
		}
		if final {
			delete(g.callers, e.Req)
		}
		if c.router.Address == ctx.ActorSystem().Address() {
			ctx.Send(c.router, m)
		} else {
			ctx.Send(c.router, e.message())
		}
	}
}

func (g *agentGrain) dispatch(ctx actor.Context, cmd wire.Command, deadline time.Time, gated, started bool, router *actor.PID) {
	g.callers[cmd.RequestID] = grainCall{router: router, deadline: deadline}
	ctx.Send(g.n.edges.PID, &actors.Dispatch{AgentID: g.id, Command: cmd, ReplyTo: ctx.Self(), Deadline: deadline,
		Gated: gated, Started: started, Placed: true})
}

func (g *agentGrain) cancel(ctx actor.Context, req string) {
	if _, held := g.callers[req]; !held {
		return
	}
	delete(g.callers, req)
	ctx.Send(g.n.edges.PID, &actors.CancelDispatch{AgentID: g.id, RequestID: req, Placed: true})
}

// Messages of the router and the grains.
type (
	sweepCalls    struct{}
	topologyMoved struct{}
	grainResolved struct {
		agent string
		pid   *actor.PID
	}
)

// placedCall is a call of this node's tool loop, placed at its agent's
// grain on owner.
type placedCall struct {
	d     actors.Dispatch // as the tool call sent it: ReplyTo is the tool call
	owner string          // the grain's node address
}

// callRouter places this node's calls at their agents' grains and
// answers the tool calls with what the grains answer.
type callRouter struct {
	n     *Node
	calls map[string]*placedCall // request_id ->
	// grains are the agents' grains resolved in the current topology;
	// waiting holds the messages for an agent whose grain is being
	// resolved, in order.
	grains  map[string]*actor.PID
	waiting map[string][]any
	stop    scheduler.CancelFunc
}

// startCallRouter spawns this node's call router and makes the edge
// registry send it the calls.
func (n *Node) startCallRouter() error {
	pid, err := n.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &callRouter{n: n, calls: map[string]*placedCall{}, grains: map[string]*actor.PID{}, waiting: map[string][]any{}}
	}), callRouterName)
	if err != nil {
		return fmt.Errorf("cluster: spawn the call router: %w", err)
	}
	n.cluster.router = pid
	n.system.Root.Send(n.edges.PID, &actors.PlaceCalls{Router: pid})
	return nil
}

func (r *callRouter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.stop = scheduler.NewTimerScheduler(ctx).SendRepeatedly(callSweep, callSweep, ctx.Self(), &sweepCalls{})
	case *actor.Stopping:
		if r.stop != nil {
			r.stop()
		}
	case *actors.Dispatch:
		r.calls[m.Command.RequestID] = &placedCall{d: *m, owner: r.n.cluster.c.OwnerOf(m.AgentID, agentKind)}
		r.send(ctx, m.AgentID, r.dispatchMsg(ctx, m))
	case *actors.CancelDispatch:
		if _, ok := r.calls[m.RequestID]; !ok {
			// Not placed by this router (sent before the node joined the
			// cluster): this node's edge actor holds it, if anyone does.
			ctx.Send(r.n.edges.PID, &actors.CancelDispatch{AgentID: m.AgentID, RequestID: m.RequestID, Placed: true})
			return
		}
		delete(r.calls, m.RequestID)
		r.send(ctx, m.AgentID, &actors.CancelDispatch{AgentID: m.AgentID, RequestID: m.RequestID})
	case *grainResolved:
		r.resolved(ctx, m)
	case *topologyMoved:
		r.moved(ctx)
	case *sweepCalls:
		now := time.Now()
		for req, c := range r.calls {
			if now.After(c.d.Deadline.Add(callGrace)) {
				delete(r.calls, req)
			}
		}
	case *wrapperspb.BytesValue:
		e, err := decodeCallEnvelope(m.Value)
		if err != nil {
			r.n.log.Warn("dropping cluster call message", "err", err)
			return
		}
		if msg, final := e.answer(); msg != nil {
			r.answer(ctx, e.Req, msg, final)
		}
	default:
		if e, final, ok := replyEnvelope("", m); ok {
			r.answer(ctx, e.Req, m, final)
		}
	}
}

// answer hands a grain's answer to the tool call that waits for it.
func (r *callRouter) answer(ctx actor.Context, req string, msg any, final bool) {
	c, ok := r.calls[req]
	if !ok {
		return // answered already (by a grain it moved from), or cancelled
	}
	if final {
		delete(r.calls, req)
	}
	ctx.Send(c.d.ReplyTo, msg)
}

// dispatchMsg is what a grain gets for d: the router answers for the
// tool call.
func (r *callRouter) dispatchMsg(ctx actor.Context, d *actors.Dispatch) *actors.Dispatch {
	m := *d
	m.ReplyTo = ctx.Self()
	return &m
}

// send delivers m to agent's grain, resolving it first when unknown in
// this topology (one lookup at a time per agent; later messages wait in
// order behind it).
func (r *callRouter) send(ctx actor.Context, agent string, m any) {
	if pid := r.grains[agent]; pid != nil {
		r.deliver(ctx, pid, m)
		return
	}
	r.waiting[agent] = append(r.waiting[agent], m)
	if len(r.waiting[agent]) > 1 {
		return
	}
	r.resolve(ctx, agent)
}

// resolve looks agent's grain up off the mailbox; grainResolved follows.
func (r *callRouter) resolve(ctx actor.Context, agent string) {
	c, self, root := r.n.cluster.c, ctx.Self(), ctx.ActorSystem().Root
	go func() {
		// Asks the owner's placement actor (a remote request, 5 s at
		// most): off the router's mailbox.
		root.Send(self, &grainResolved{agent: agent, pid: c.Proto().Get(agent, agentKind)})
	}()
}

// resolved delivers the messages that waited for an agent's grain; with
// no grain (no member answered), their calls fail at once.
func (r *callRouter) resolved(ctx actor.Context, m *grainResolved) {
	if m.pid != nil && m.pid.Address != r.n.cluster.c.OwnerOf(m.agent, agentKind) {
		// The membership changed while it was looked up: again, with
		// the messages still waiting in order.
		r.resolve(ctx, m.agent)
		return
	}
	queued := r.waiting[m.agent]
	delete(r.waiting, m.agent)
	if m.pid == nil {
		for _, q := range queued {
			d, ok := q.(*actors.Dispatch)
			if !ok {
				continue
			}
			req := d.Command.RequestID
			if c, held := r.calls[req]; held {
				delete(r.calls, req)
				ctx.Send(c.d.ReplyTo, &actors.DispatchFailed{RequestID: req, Type: wire.ErrAgentOffline, Transient: true,
					Movable: !d.Started,
					Err:     fmt.Sprintf("no cluster node can take edge agent %q's calls now", m.agent)})
			}
		}
		return
	}
	r.grains[m.agent] = m.pid
	for _, q := range queued {
		r.deliver(ctx, m.pid, q)
	}
}

// deliver sends m to a grain: as it is on this node, as an envelope to
// another.
func (r *callRouter) deliver(ctx actor.Context, grain *actor.PID, m any) {
	if grain.Address == ctx.ActorSystem().Address() {
		ctx.Send(grain, m)
		return
	}
	var e *callEnvelope
	switch m := m.(type) {
	case *actors.Dispatch:
		cmd := m.Command
		e = &callEnvelope{Op: opDispatch, Agent: m.AgentID, Req: cmd.RequestID, Command: &cmd,
			DeadlineMS: m.Deadline.UnixMilli(), Gated: m.Gated, Started: m.Started, ReplyAddr: ctx.Self().Address}
	case *actors.CancelDispatch:
		e = &callEnvelope{Op: opCancelCall, Agent: m.AgentID, Req: m.RequestID}
	default:
		return
	}
	ctx.Send(grain, e.message())
}

// moved places again every call whose agent's owner changed with the
// membership: cancelled at the old grain (if its node is still there)
// and sent to the new one as possibly started (the old owner may have
// told the agent to run it), under the same request_id.
func (r *callRouter) moved(ctx actor.Context) {
	old := r.grains
	r.grains = map[string]*actor.PID{}
	for req, c := range r.calls {
		owner := r.n.cluster.c.OwnerOf(c.d.AgentID, agentKind)
		if owner == c.owner {
			continue
		}
		if pid := old[c.d.AgentID]; pid != nil {
			r.deliver(ctx, pid, &actors.CancelDispatch{AgentID: c.d.AgentID, RequestID: req})
		}
		r.n.log.Info("placing a call again: its agent moved to another node", "agent", c.d.AgentID, "request_id", req,
			"from", c.owner, "to", owner)
		r.n.cluster.replaced.Add(1)
		c.owner = owner
		c.d.Started = true
		r.send(ctx, c.d.AgentID, r.dispatchMsg(ctx, &c.d))
	}
}

// agentHolder names the node holding agentID's calls ("" on a node
// alone).
func (n *Node) agentHolder(agentID string) string {
	cn := n.cluster
	if cn == nil || cn.c == nil {
		return ""
	}
	return cn.c.NodeAt(cn.c.OwnerOf(agentID, agentKind))
}
