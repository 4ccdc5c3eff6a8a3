package orchestrator

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/persistence"
)

// InboundConf bounds what agents' MQTT traffic may cost the node, [inbound]
// in evoclaw.toml. The zero value takes every default.
type InboundConf struct {
	// InboundLimits is the token bucket per agent: messages_per_second
	// (default 1000), message_burst (2000), bytes_per_second (8 MiB),
	// byte_burst (16 MiB); a negative rate turns that limit off. Messages
	// over it are dropped before they are decoded, counted in
	// evoclaw_inbound_dropped_messages_total, and logged at most once per
	// agent per 10 s.
	rate.InboundLimits
	// EventsPerWindow is how many events of one kind an agent can make the
	// node store per EventWindow: late or unknown-id results, malformed
	// messages, presence changes. The rest are counted
	// (evoclaw_audit_events_suppressed_total) and the next stored one says
	// how many were left out. Zero means actors.DefaultEventsPerWindow (20).
	EventsPerWindow int `toml:"events_per_window"`
	// EventWindow is the window of EventsPerWindow. Zero means
	// actors.DefaultEventWindow (1h).
	EventWindow Duration `toml:"event_window"`
	// ExcerptBytes bounds the excerpt of what an agent sent kept in such an
	// event. Zero means actors.DefaultEventExcerptBytes (256).
	ExcerptBytes int `toml:"excerpt_bytes"`
}

func (c InboundConf) validate() error {
	if c.MessageBurst < 0 || c.ByteBurst < 0 || c.EventsPerWindow < 0 || c.EventWindow.Duration < 0 || c.ExcerptBytes < 0 {
		return fmt.Errorf("inbound: bursts, events_per_window, event_window and excerpt_bytes must not be negative (0 means the default)")
	}
	return nil
}

// inboundOverLogEvery is how often the node logs, per agent, that it drops
// the agent's messages over its rate limit.
const inboundOverLogEvery = 10 * time.Second

// inbound is the node's guard on what agents send: the rate limit per agent,
// the quota of events they can make it store, and the bounded logger for
// lines that quote them.
type inbound struct {
	limits  *rate.Inbound
	events  *rate.Quota // shared with the edge registry
	overLog *rate.Quota // one "over the limit" line per agent per inboundOverLogEvery
	excerpt int
	logLim  *boundlog.Limiter // shared by every path that logs what clients send
	log     *slog.Logger      // bounded and rate-limited through logLim
	now     func() time.Time
}

func newInbound(c InboundConf, log *slog.Logger) *inbound {
	lim := boundlog.NewLimiter()
	excerpt := c.ExcerptBytes
	if excerpt <= 0 {
		excerpt = actors.DefaultEventExcerptBytes
	}
	return &inbound{
		limits:  rate.NewInbound(c.InboundLimits),
		events:  actors.NewEventQuota(c.EventsPerWindow, c.EventWindow.Duration),
		overLog: rate.NewQuota(1, inboundOverLogEvery),
		excerpt: excerpt, logLim: lim, log: boundlog.Logger(log, lim), now: time.Now,
	}
}

// admit reports whether a message of size bytes from agentID is within its
// rate limit. Over it, the message is dropped and counted.
func (in *inbound) admit(agentID string, size int) bool {
	now := in.now()
	if in.limits.Allow(agentID, size, now) {
		return true
	}
	if suppressed, ok := in.overLog.Allow(agentID, now); ok {
		in.log.Warn("dropping messages of an agent over its inbound rate limit", "agent", agentID,
			"dropped_since_last_line", suppressed+1)
	}
	return false
}

// invalidMessage returns the event auditing a malformed message from
// agentID, or false when the agent used up its quota of them.
func (in *inbound) invalidMessage(node, agentID, kind string, payload []byte, err error) (persistence.Event, bool) {
	suppressed, ok := in.events.Allow(actors.EventQuotaKey(agentID, persistence.EventInvalidMessage), in.now())
	if !ok {
		return persistence.Event{}, false
	}
	in.log.Warn("dropping malformed message", "agent", agentID, "topic_kind", kind, "bytes", len(payload), "err", err)
	d := map[string]any{"topic_kind": kind, "bytes": len(payload), "error": boundlog.String(err.Error()),
		"excerpt": boundlog.Cut(persistence.Excerpt(string(payload[:min(len(payload), in.excerpt+8)])), in.excerpt)}
	if suppressed > 0 {
		d["suppressed_before"] = suppressed
	}
	detail, _ := json.Marshal(d) // strings and ints only
	return persistence.Event{Node: node, AgentID: agentID, Kind: persistence.EventInvalidMessage, Detail: detail}, true
}
