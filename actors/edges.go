package actors

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/defaults"
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
	// DefaultAgentMailboxSize bounds each agent actor's mailbox: four
	// times DefaultMaxInFlight. Protoactor's bounded mailbox allocates
	// every slot up front (24 bytes each), so 1,024 cost 24 KB per agent.
	DefaultAgentMailboxSize = 256
	DefaultMaxInFlight      = 64 // requests waiting on one agent
	// DefaultToolsListTimeout bounds the wait for an answer to tools_list.
	DefaultToolsListTimeout = 10 * time.Second
	// DefaultToolsListRetry is how long a tools_list may stay unanswered
	// after the agent announced a (re)connect before it is asked again.
	DefaultToolsListRetry = time.Second
	// DefaultForgetAfter is how long an agent stays known while offline
	// with nothing in flight (forget.go).
	DefaultForgetAfter = 7 * 24 * time.Hour
	// DefaultMaxAgents bounds the agents known at once (forget.go).
	DefaultMaxAgents = 1024
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
	// MailboxSize bounds the registry's mailbox (default 1024), and
	// AgentMailboxSize each agent actor's (default 256). A full mailbox
	// blocks its sender, which pushes back on the MQTT client; nothing is
	// dropped. An agent's actor answers a dispatch beyond MaxInFlight at
	// once (busy), so its mailbox drains as fast as messages come.
	MailboxSize      int
	AgentMailboxSize int
	// MaxInFlight bounds the requests waiting on one agent (default 64);
	// one more is refused at once with error type "busy", so a saturated
	// agent pushes back on the tool loop instead of queueing without bound.
	MaxInFlight int
	// ToolsListTimeout is how long an agent has to answer tools_list
	// (default 10 s). At most one tools_list per agent is awaited; one
	// unanswered by then counts as not listed (the agent is still called
	// by action name).
	ToolsListTimeout time.Duration
	// ToolsListRetry is how long an awaited tools_list may stay
	// unanswered after the agent announces a (re)connect (its online
	// status, sent once it is subscribed to its commands) before another
	// replaces it (default 1 s): it was sent before the announcement, so
	// the broker may have had no subscription to deliver it to. Once per
	// announcement; calls are refused as busy while tools are listed.
	ToolsListRetry time.Duration
	// Events, when set, records presence changes and late or unknown
	// results (a reply for a request that already timed out), so they are
	// audited rather than only logged. Node names this node in them.
	Events persistence.EventLog
	Node   string
	// AgentAddress, when set, gives the network address an agent's MQTT
	// connection comes from, or an error saying why it is not known (an
	// external broker does not tell), for its agent_online events
	// (agentorigin.go). It is called on the agent's actor: it must be
	// quick. Nil: the events say the address was not looked up.
	AgentAddress func(agentID string) (string, error)
	// Progress counts streamed tool output routed and dropped; nil means
	// counters of the registry's own.
	Progress *ProgressStats
	// EventQuota bounds the events each agent can make Events store, per
	// agent and kind (keys from EventQuotaKey). Nil means NewEventQuota(0, 0).
	EventQuota *rate.Quota
	// ExcerptBytes bounds a late result's excerpt in its event. Zero means
	// DefaultEventExcerptBytes.
	ExcerptBytes int
	// ForgetAfter is how long an agent stays known while it is offline
	// (neither online nor of unknown presence) with no request in flight:
	// past it the agent is forgotten, its actor stopped and its entry
	// removed from the Catalog, as if never heard of; heard from again, it
	// is known anew. Zero means DefaultForgetAfter (7 days); negative means
	// never.
	ForgetAfter time.Duration
	// MaxAgents bounds the agents known at once (zero means
	// DefaultMaxAgents). A new agent id past it first forgets the offline
	// agent with nothing in flight that was heard from longest ago; with
	// none, the new id's message is dropped (logged).
	MaxAgents int
	Now       func() time.Time
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
	defaults.Positive(&o.HeartbeatTimeout, DefaultHeartbeatTimeout)
	defaults.Positive(&o.TickInterval, DefaultTickInterval)
	defaults.Positive(&o.PublishTimeout, DefaultPublishTimeout)
	defaults.Positive(&o.MailboxSize, DefaultMailboxSize)
	defaults.Positive(&o.AgentMailboxSize, DefaultAgentMailboxSize)
	defaults.Positive(&o.MaxInFlight, DefaultMaxInFlight)
	defaults.Positive(&o.ToolsListTimeout, DefaultToolsListTimeout)
	defaults.Positive(&o.ToolsListRetry, DefaultToolsListRetry)
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
	defaults.Positive(&o.ExcerptBytes, DefaultEventExcerptBytes)
	if o.ForgetAfter == 0 {
		o.ForgetAfter = DefaultForgetAfter
	}
	defaults.Positive(&o.MaxAgents, DefaultMaxAgents)
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
		return &registry{opts: &o, cat: cat, gauges: gs, children: map[string]*actor.PID{}, since: map[string]time.Time{}}
	}, actor.WithMailbox(actor.Bounded(o.MailboxSize)), onHot)
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
	// since is when each child was spawned. spawns numbers the actors of
	// agents heard from again while their forgotten actor still stops,
	// which get a name of their own (forget.go).
	since  map[string]time.Time
	spawns uint64
	// leaving maps the actor id of each forgotten agent's stopping actor
	// to the agent id; stopSweeps ends the sweeps (nil when none).
	leaving    map[string]string
	stopSweeps func()
	// router places calls in a cluster (PlaceCalls); nil on a node alone.
	router *actor.PID
}

func (r *registry) Receive(ctx actor.Context) {
	var id string
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.startSweeps(ctx)
		return
	case *actor.Stopping:
		if r.stopSweeps != nil {
			r.stopSweeps()
		}
		return
	case *sweepAgents:
		r.sweep(ctx, r.opts.Now())
		return
	case *ReportIn:
		id = m.AgentID
	case *StatusIn:
		id = m.AgentID
	case *CapabilitiesIn:
		id = m.AgentID
	case *PlaceCalls:
		r.router = m.Router
		return
	case *Dispatch:
		id = m.AgentID
		if r.router != nil && !m.Placed {
			ctx.Send(r.router, m)
			return
		}
		if _, known := r.children[id]; !known && !m.Placed {
			// Never heard of it: do not create an actor for a typo.
			ctx.Send(m.ReplyTo, &DispatchFailed{RequestID: m.Command.RequestID, Type: wire.ErrAgentOffline,
				Err: fmt.Sprintf("edge agent %q is not known to this orchestrator", id), Movable: !m.Started})
			return
		}
	case *CancelDispatch:
		id = m.AgentID
		if r.router != nil && !m.Placed {
			ctx.Send(r.router, m)
			return
		}
		if _, known := r.children[id]; !known {
			return
		}
	case *ResendPending:
		for _, pid := range r.children {
			ctx.Send(pid, m)
		}
		return
	case *actor.Terminated:
		r.terminated(m.Who)
		return
	default:
		return
	}
	pid, ok := r.children[id]
	if !ok {
		err := wire.ValidateAgentID(id)
		if err == nil {
			err = wire.ValidateToolPrefix(id)
		}
		if err != nil {
			r.opts.Logger.Warn("dropping message for invalid agent id", "agent", id, "err", err)
			return
		}
		if !r.makeRoom(ctx, id) {
			return
		}
		info := AgentInfo{ID: id}
		var unknownSince time.Time
		if d, ok := ctx.Message().(*Dispatch); ok && d.Placed {
			// A call another node placed here (this node holds the
			// agent's calls in a cluster) before this node heard of the
			// agent: it has just joined, and the agent's retained status
			// is on its way. The calling node knows the agent: the call
			// is tried, as for an agent known from its capabilities only.
			info.PresenceUnknown, unknownSince = true, r.opts.Now()
		}
		props := actor.PropsFromProducer(func() actor.Actor {
			return &edgeActor{opts: r.opts, cat: r.cat, info: info, pending: map[string]*pending{},
				gauges: r.gauges.of(id), unknownSince: unknownSince}
		}, actor.WithMailbox(actor.Bounded(r.opts.AgentMailboxSize)), onHot)
		pid, err = ctx.SpawnNamed(props, safeName(ctx.Self().Id, r.childName(id)))
		if err != nil {
			r.opts.Logger.Error("spawn edge actor", "agent", id, "err", err)
			return
		}
		r.children[id], r.since[id] = pid, r.opts.Now()
	}
	ctx.Forward(pid)
}
