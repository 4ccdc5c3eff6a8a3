package actors

import (
	"sync"
	"sync/atomic"
	"time"
)

// agentGauges are what an edge actor publishes about its agent after every
// message, for readers (status, the console) that load them without a
// message round trip, as they read the Catalog. The Catalog is swapped only
// when presence, capabilities or tools change; these change with every
// call and heartbeat.
type agentGauges struct {
	// inFlight is how many tool-loop requests wait on the agent.
	inFlight atomic.Int64
	// lastSeen is when anything was last heard from it, Unix nanoseconds.
	lastSeen atomic.Int64
}

// gauges holds the agentGauges of every agent known; bounded like
// the registry's children, one per agent known (forget.go).
type gauges struct {
	mu   sync.Mutex // guards byID
	byID map[string]*agentGauges
}

// of returns agentID's gauges, creating them.
func (g *gauges) of(agentID string) *agentGauges {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byID == nil {
		g.byID = map[string]*agentGauges{}
	}
	a, ok := g.byID[agentID]
	if !ok {
		a = &agentGauges{}
		g.byID[agentID] = a
	}
	return a
}

// remove forgets agentID's gauges (a forgotten agent, forget.go).
func (g *gauges) remove(agentID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.byID, agentID)
}

// lookup returns agentID's gauges, nil for an agent never heard of.
func (g *gauges) lookup(agentID string) *agentGauges {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byID[agentID]
}

// InFlight is how many of the tool loop's requests (tool calls,
// edge_call prompts) wait on agentID's answer now: sent or being sent, not
// yet answered, failed or expired. Zero for an unknown agent.
func (e *Edges) InFlight(agentID string) int64 {
	if a := e.gauges.lookup(agentID); a != nil {
		return a.inFlight.Load()
	}
	return 0
}

// LastSeen is when anything (a report, a heartbeat, a status) was last
// heard from agentID; zero for an unknown agent. It is fresher than the
// Catalog's LastSeen, which moves only with presence and tool changes.
func (e *Edges) LastSeen(agentID string) time.Time {
	if a := e.gauges.lookup(agentID); a != nil {
		if ns := a.lastSeen.Load(); ns != 0 {
			return time.Unix(0, ns)
		}
	}
	return time.Time{}
}

// publishGauges stores the number of pending requests that belong to the
// tool loop (the actor's own tools_list and pings are not counted) and the
// time the agent was last heard from.
func (e *edgeActor) publishGauges() {
	if e.gauges == nil {
		return
	}
	var n int64
	for _, p := range e.pending {
		if p.replyTo != nil {
			n++
		}
	}
	e.gauges.inFlight.Store(n)
	if !e.info.LastSeen.IsZero() {
		e.gauges.lastSeen.Store(e.info.LastSeen.UnixNano())
	}
}
