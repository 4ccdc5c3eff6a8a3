package actors

import (
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// ToolSep joins agent id and tool name in the name shown to the LLM
// ("pi-1__sysinfo"), the same convention as MCP tools' {server}__{tool}.
const ToolSep = wire.ToolSep

// AgentInfo is what the orchestrator knows of one edge agent.
type AgentInfo struct {
	ID           string
	Online       bool
	Capabilities string
	Tools        []wire.ToolInfo
	LastSeen     time.Time
	// Listing is true while a tools_list asked of the agent (after it
	// connected or reconnected) is unanswered: a tool missing from Tools may
	// only not be listed yet.
	Listing bool
	// Listed is true once the agent answered tools_list with a list, so
	// Tools is what it offers. An agent that never did (the public agent
	// may not know tools_list) is still called by action name: the
	// orchestrator sends the tool command and the agent answers, with its
	// own error for an action it lacks.
	Listed bool
	// PresenceUnknown is true when the agent's retained capabilities
	// arrived but nothing else was heard since this orchestrator started
	// (the public agent publishes no status, and its next heartbeat may be
	// 30 s away). Such an agent is offered and called as if online; the
	// first answer makes it Online, and with nothing heard for the
	// heartbeat timeout it is offline.
	PresenceUnknown bool
	// StartGate: its last online status listed wire.FeatureStartGate, so a
	// group call sent to it can move to another member until it starts.
	StartGate bool
	// NotRecording is why the agent's own audit trail cannot write, as
	// its last online status said (wire.Status.NotRecording): it refuses
	// every command meanwhile. "" when it said nothing (it can, or it is
	// a peer that does not say). Calls are still sent (docs/WIRE.md).
	NotRecording string
}

// Callable reports whether calls to a are sent: it is online, or its
// presence is unknown.
func (a AgentInfo) Callable() bool { return a.Online || a.PresenceUnknown }

// Catalog is an immutable snapshot of the known agents.
type Catalog struct {
	Agents map[string]AgentInfo
}

// Online lists online agents sorted by id.
func (c *Catalog) Online() []AgentInfo {
	if c == nil {
		return nil
	}
	var out []AgentInfo
	for _, a := range c.Agents {
		if a.Online {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Callable lists the agents calls are sent to (online, or presence
// unknown), sorted by id.
func (c *Catalog) Callable() []AgentInfo {
	if c == nil {
		return nil
	}
	var out []AgentInfo
	for _, a := range c.Agents {
		if a.Callable() {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Resolve maps an LLM-facing tool name to an online agent and its tool.
func (c *Catalog) Resolve(name string) (AgentInfo, wire.ToolInfo, bool) {
	agentID, tool, ok := strings.Cut(name, ToolSep)
	if !ok || c == nil {
		return AgentInfo{}, wire.ToolInfo{}, false
	}
	a, ok := c.Agents[agentID]
	if !ok {
		return AgentInfo{}, wire.ToolInfo{}, false
	}
	for _, t := range a.Tools {
		if t.Name == tool {
			return a, t, true
		}
	}
	return a, wire.ToolInfo{}, false
}

// catalogRef is the atomically swapped snapshot shared by the registry
// (only writer) and conversations (readers).
type catalogRef struct{ p atomic.Pointer[Catalog] }

func (r *catalogRef) load() *Catalog {
	if c := r.p.Load(); c != nil {
		return c
	}
	return &Catalog{}
}

// with returns a copy of the catalog with one agent replaced.
func (r *catalogRef) store(a AgentInfo) {
	old := r.load()
	next := &Catalog{Agents: make(map[string]AgentInfo, len(old.Agents)+1)}
	for k, v := range old.Agents {
		next.Agents[k] = v
	}
	next.Agents[a.ID] = a
	r.p.Store(next)
}

// remove drops agent id from the catalog.
func (r *catalogRef) remove(id string) {
	for {
		old := r.p.Load()
		if old == nil {
			return
		}
		if _, ok := old.Agents[id]; !ok {
			return
		}
		next := &Catalog{Agents: make(map[string]AgentInfo, len(old.Agents))}
		for k, v := range old.Agents {
			if k != id {
				next.Agents[k] = v
			}
		}
		if r.p.CompareAndSwap(old, next) {
			return
		}
	}
}
