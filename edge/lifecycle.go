package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
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
// for its commit, as Run's next steps write behind it anyway. Its outcome
// closes startRecorded.
func (a *Agent) recordStart() {
	done := sync.OnceFunc(func() { close(a.startRecorded) })
	b, _ := json.Marshal(a.startDetail()) // strings and an int
	ev := persistence.Event{Node: a.cfg.AgentID, AgentID: a.cfg.AgentID, Kind: EventAgentStart, Detail: b}
	if err := a.store.QueueEvent(ev, func(err error) {
		if err != nil {
			a.log.Error("audit event", "kind", EventAgentStart, "err", err)
		}
		done()
	}); err != nil {
		a.log.Error("audit event", "kind", EventAgentStart, "err", err)
		done()
	}
}

// auditFreeFloor is the free space under which AuditProblem says the
// disk is full: writes that fit the space the database's log file already
// holds may still succeed (such as the agent_start event), but a command's
// records soon do not, and it is refused.
const auditFreeFloor = 1 << 20

// startOutcomeWait bounds how long AuditProblem waits for the outcome of
// the agent_start event's write.
const startOutcomeWait = 2 * time.Second

// AuditProblem says why the agent's audit trail cannot write now, "" when
// nothing says so: its last write failed, such as this run's agent_start
// event on a card that turned read-only, or its disk has less than
// auditFreeFloor free (the database's log files, left by a crash, let the
// agent open it on a full disk). Every command is refused meanwhile, as
// none runs unrecorded; a write that succeeds again (space freed) ends it
// without a restart, and a write that failed for a full disk says nothing
// once auditFreeFloor is free again. Once Run has started, it waits for
// the agent_start event's outcome (at most startOutcomeWait).
func (a *Agent) AuditProblem() string {
	select {
	case <-a.startRecorded:
	case <-time.After(startOutcomeWait):
	}
	if a.store == nil {
		return ""
	}
	free, err := dataDirFree(a.cfg.DataDir)
	full := err == nil && free < auditFreeFloor
	// A write that failed for a full disk that has room again is no
	// problem now: the next write retries (and nothing else writes until
	// a command comes).
	if h := a.store.WriteHealth(); h.Failing() && (!h.DiskFull || err != nil || full) {
		return h.LastError
	}
	if full {
		return fmt.Sprintf("its disk is full: %d KiB free", free>>10)
	}
	return ""
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
