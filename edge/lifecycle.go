package edge

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// Event kinds of the agent's own start and stop in its audit trail, as a
// node's node_start and node_stop in its own (docs/AUDIT.md).
const (
	EventAgentStart = "agent_start"
	EventAgentStop  = "agent_stop"
)

// hostName is the machine's host name as the agent reports it (its online
// status, its agent_start event): within the wire's bound, "" when the
// system does not say.
func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return wire.BoundText(h, wire.MaxHostLen)
}

// brokerForTrail is the broker URL without its user part (a user name,
// and a password someone wrote there), as the trail records it.
func brokerForTrail(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable broker URL)"
	}
	u.User = nil
	return u.String()
}

// startDetail is the detail of the agent_start event.
func (a *Agent) startDetail() map[string]any {
	dir, err := filepath.Abs(a.cfg.DataDir)
	if err != nil {
		dir = a.cfg.DataDir
	}
	return map[string]any{"version": a.cfg.Version, "host": a.host, "data_dir": dir,
		"broker": brokerForTrail(a.cfg.MQTT.Broker), "pid": os.Getpid()}
}

// recordStart queues the agent_start event, the first record of this run
// (a write submitted later commits no earlier); the agent does not wait
// for its commit, as Run's next steps write behind it anyway.
func (a *Agent) recordStart() {
	b, _ := json.Marshal(a.startDetail()) // strings and an int
	ev := persistence.Event{Node: a.cfg.AgentID, AgentID: a.cfg.AgentID, Kind: EventAgentStart, Detail: b}
	if err := a.store.QueueEvent(ev, func(err error) {
		if err != nil {
			a.log.Error("audit event", "kind", EventAgentStart, "err", err)
		}
	}); err != nil {
		a.log.Error("audit event", "kind", EventAgentStart, "err", err)
	}
}

// recordStop writes the agent_stop event once Run's goroutines ended:
// why is "shutdown command" or "stopped by its process" (a signal, or the
// embedding program's context).
func (a *Agent) recordStop(why string) {
	b, _ := json.Marshal(map[string]any{"why": why, "uptime_ms": time.Since(a.start).Milliseconds()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.store.RecordEvent(ctx, persistence.Event{Node: a.cfg.AgentID, AgentID: a.cfg.AgentID, Kind: EventAgentStop, Detail: b}); err != nil {
		a.log.Error("audit event", "kind", EventAgentStop, "err", err)
	}
}

// stopReason is why Run ended, for the agent_stop event: with err, the
// error; else whether parent (the program's context) ended it or a
// shutdown command did.
func stopReason(parent context.Context, err error) string {
	switch {
	case err != nil:
		return "error: " + wire.BoundText(err.Error(), 512)
	case parent.Err() != nil:
		return "stopped by its process"
	default:
		return "shutdown command"
	}
}
