package actors

import (
	"sync"
	"sync/atomic"
)

// inflight holds, per agent, how many tool-loop requests wait on it. Each
// edge actor stores its own count after every message; readers (status,
// the console) load it without a message round trip, as they read the
// Catalog.
type inflight struct {
	mu sync.Mutex // guards byID
	// byID holds one gauge per agent ever spawned; bounded like the
	// registry's children, one per valid agent id heard of.
	byID map[string]*atomic.Int64
}

// gauge returns agentID's gauge, creating it.
func (f *inflight) gauge(agentID string) *atomic.Int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID == nil {
		f.byID = map[string]*atomic.Int64{}
	}
	g, ok := f.byID[agentID]
	if !ok {
		g = &atomic.Int64{}
		f.byID[agentID] = g
	}
	return g
}

// load returns agentID's count; 0 for an agent never heard of.
func (f *inflight) load(agentID string) int64 {
	f.mu.Lock()
	g := f.byID[agentID]
	f.mu.Unlock()
	if g == nil {
		return 0
	}
	return g.Load()
}

// InFlight is how many of the tool loop's requests (tool calls,
// edge_call prompts) wait on agentID's answer now: sent or being sent, not
// yet answered, failed or expired. Zero for an unknown agent.
func (e *Edges) InFlight(agentID string) int64 { return e.inflight.load(agentID) }

// countInFlight stores the number of pending requests that belong to the
// tool loop (the actor's own tools_list and pings are not counted).
func (e *edgeActor) countInFlight() {
	if e.inflight == nil {
		return
	}
	var n int64
	for _, p := range e.pending {
		if p.replyTo != nil {
			n++
		}
	}
	e.inflight.Store(n)
}
