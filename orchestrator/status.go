package orchestrator

import (
	"net/http"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
	"github.com/evoclaw/evoclaw/persistence/tiers"
)

// Status is what GET /v1/status answers (documented field by field in
// docs/API.md, for `evoclaw status` and other tools).
type Status struct {
	NodeID  string                 `json:"node_id"`
	Broker  string                 `json:"broker"`
	Agents  []AgentStatus          `json:"agents"`
	Metrics actors.MetricsSnapshot `json:"metrics"`
	Audit   tiers.Status           `json:"audit"`
	// AuditWrite says whether the audit trail's writes reach the disk.
	AuditWrite AuditWriteStatus `json:"audit_write"`
	// NodeTools are tool counters under names that belong to no known
	// agent: the node's own tools, edge_call, agents no longer listed.
	NodeTools []ToolStatus `json:"node_tools"`
	// LLM is the provider and the health of its links.
	LLM LLMStatus `json:"llm"`
	// MQTT is the node's session and the broker's clients.
	MQTT MQTTStatus `json:"mqtt"`
	// Ready is what GET /readyz answers.
	Ready Readiness `json:"ready"`
	// Groups are the [[groups]] with their online members.
	Groups []GroupStatus `json:"groups"`
	// Cluster is the membership this node sees; absent on a node alone.
	Cluster *cluster.Status `json:"cluster,omitempty"`
	// ChatInput is the budget of API clients' chat input; absent when
	// [loop] chat_input_mb_per_hour is negative (no bound).
	ChatInput *ChatInputStatus `json:"chat_input,omitempty"`
}

// AgentStatus is one edge agent in Status.
type AgentStatus struct {
	ID           string    `json:"id"`
	Online       bool      `json:"online"`
	Capabilities string    `json:"capabilities"`
	Tools        []string  `json:"tools"`
	LastSeen     time.Time `json:"last_seen"`
	// InFlight is how many tool calls and prompts wait on the agent now:
	// of this node alone, or in a cluster, of every node when this node
	// holds the agent's calls (Node) and 0 on the others.
	InFlight int64 `json:"in_flight"`
	// Node, in a cluster, is the node holding the agent's calls: the
	// owner of its grain, which every node's calls to it go through.
	Node string `json:"node,omitempty"`
	// PresenceUnknown: known from its retained capabilities only, not
	// heard from since the node started; calls to it are tried.
	PresenceUnknown bool `json:"presence_unknown,omitempty"`
	// ToolsListed: it answered tools_list; false: it is called by action
	// name (docs/WIRE.md).
	ToolsListed bool `json:"tools_listed"`
	// NotRecording is why the agent's own audit trail cannot write (a
	// full disk, a card turned read-only), as its online status said: it
	// refuses every command it cannot record until then, answering an
	// internal error. Absent when it can, or does not say (docs/WIRE.md).
	NotRecording string `json:"not_recording,omitempty"`
	// ToolStats has one entry per tool in Tools, in the same order, with
	// the counters of calls the model made by the name AGENT__TOOL.
	ToolStats []ToolStatus `json:"tool_stats"`
}

// ToolStatus is the counters of one tool since the node started.
type ToolStatus struct {
	// Name is the tool's own name under an agent, the model-visible name
	// in NodeTools.
	Name     string  `json:"name"`
	Calls    int64   `json:"calls"`
	Errors   int64   `json:"errors"` // timeouts included
	Timeouts int64   `json:"timeouts"`
	AvgMs    float64 `json:"avg_ms"`
	MaxMs    int64   `json:"max_ms"`
}

// AuditWriteStatus is the audit store's write health.
type AuditWriteStatus struct {
	LastOK      time.Time `json:"last_ok,omitzero"`
	LastFailure time.Time `json:"last_failure,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
	Failing     bool      `json:"failing"`
	// FreeBytes is the free space of the file system holding the data
	// directory; -1 when it cannot be read.
	FreeBytes int64 `json:"free_bytes"`
}

// LLMStatus is the provider and its links.
type LLMStatus struct {
	Provider string `json:"provider"`
	// Links are the fallback chain's models in order; empty for a
	// provider without links (the scripted player).
	Links []LLMLink `json:"links"`
}

// LLMLink is one model of the chain with its health.
type LLMLink struct {
	// State is "ok", "failing" (failed since its last success, still
	// tried), "not_answering" (its server did not answer the last
	// background check, see not_answering_since; still tried) or
	// "cooling" (skipped until cooling_until).
	State string `json:"state"`
	resilient.Health
}

// MQTTStatus is the node's MQTT session and, for the embedded broker, the
// clients connected to it.
type MQTTStatus struct {
	URL       string `json:"url"`
	Embedded  bool   `json:"embedded"`
	Connected bool   `json:"connected"`
	// ClientCount and Clients list the embedded broker's connected clients
	// (the node's own session included); -1 and empty for an external
	// broker, whose clients this node cannot see.
	ClientCount int                 `json:"client_count"`
	Clients     []broker.ClientInfo `json:"clients"`
}

// Status gathers what GET /v1/status answers.
func (n *Node) Status() Status {
	m := n.Metrics()
	s := Status{NodeID: n.cfg.NodeID, Broker: n.BrokerURL(), Agents: []AgentStatus{}, Metrics: m, Audit: n.AuditStatus(),
		NodeTools: []ToolStatus{}, Ready: n.Ready(), Groups: n.groupStatus(), ChatInput: n.chatInput.status(n.now())}
	claimed := map[string]bool{}
	for _, a := range n.Catalog().Agents {
		as := AgentStatus{ID: a.ID, Online: a.Online, Capabilities: a.Capabilities, Tools: []string{}, LastSeen: n.lastSeen(a), Node: n.agentHolder(a.ID),
			InFlight: n.edges.InFlight(a.ID), PresenceUnknown: a.PresenceUnknown, ToolsListed: a.Listed, NotRecording: a.NotRecording, ToolStats: []ToolStatus{}}
		for _, t := range a.Tools {
			as.Tools = append(as.Tools, t.Name)
			key := a.ID + "__" + t.Name
			claimed[key] = true
			as.ToolStats = append(as.ToolStats, toolStatus(t.Name, m.Tools[key]))
		}
		s.Agents = append(s.Agents, as)
	}
	for _, name := range m.ToolNames() {
		if !claimed[name] {
			s.NodeTools = append(s.NodeTools, toolStatus(name, m.Tools[name]))
		}
	}
	h := n.store.WriteHealth()
	s.AuditWrite = AuditWriteStatus{LastOK: h.LastOK, LastFailure: h.LastFailure, LastError: h.LastError, Failing: h.Failing(), FreeBytes: -1}
	if free, err := n.diskFree(n.cfg.DataDir); err == nil {
		s.AuditWrite.FreeBytes = int64(min(free, 1<<62))
	}
	s.LLM = LLMStatus{Provider: n.provider.Name(), Links: []LLMLink{}}
	for _, l := range n.llmHealth() {
		state := "ok"
		switch {
		case !l.CoolingUntil.IsZero():
			state = "cooling"
		case !l.NotAnsweringSince.IsZero():
			state = "not_answering"
		case l.ConsecutiveFailures > 0:
			state = "failing"
		}
		s.LLM.Links = append(s.LLM.Links, LLMLink{State: state, Health: l})
	}
	s.MQTT = MQTTStatus{URL: n.BrokerURL(), Embedded: n.broker != nil, Connected: n.client != nil && n.client.Connected(),
		ClientCount: -1, Clients: []broker.ClientInfo{}}
	if n.broker != nil {
		if cl := n.broker.Clients(); cl != nil {
			s.MQTT.Clients = cl
		}
		s.MQTT.ClientCount = len(s.MQTT.Clients)
	}
	if n.cluster != nil && n.cluster.c != nil {
		cs := n.clusterStatus()
		s.Cluster = &cs
	}
	return s
}

func toolStatus(name string, t actors.ToolStats) ToolStatus {
	return ToolStatus{Name: name, Calls: t.Calls, Errors: t.Errors, Timeouts: t.Timeouts, AvgMs: t.AvgMs(), MaxMs: t.MaxMs}
}

func (n *Node) handleStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.Status())
}
