package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"time"

	"github.com/evoclaw/evoclaw/actors"
)

// AgentList is what GET /v1/agents answers: every agent the node has
// heard of, sorted by id, with its tools in full.
type AgentList struct {
	Agents []AgentDetail `json:"agents"`
}

// AgentDetail is one edge agent of AgentList.
type AgentDetail struct {
	ID           string    `json:"id"`
	Online       bool      `json:"online"`
	Capabilities string    `json:"capabilities"`
	LastSeen     time.Time `json:"last_seen"`
	// Listing is true while the node waits for the agent's tools_list
	// (after it came online): its tools may be incomplete.
	Listing bool `json:"listing"`
	// InFlight is how many tool calls and prompts of the node wait on the
	// agent now.
	InFlight int64 `json:"in_flight"`
	// NotRecording is why the agent's own audit trail cannot write, as
	// its online status said: it refuses every command meanwhile. Absent
	// when it can, or it does not say (docs/WIRE.md).
	NotRecording string       `json:"not_recording,omitempty"`
	Tools        []ToolDetail `json:"tools"`
}

// ToolDetail is one tool of an agent as it listed it, with the node's
// counters of its calls.
type ToolDetail struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
	// TimeoutMS is the tool's own timeout; 0 when the agent's default applies.
	TimeoutMS   int64    `json:"timeout_ms"`
	Category    string   `json:"category,omitempty"`
	Permissions []string `json:"permissions"`
	Sandboxing  string   `json:"sandboxing,omitempty"`
	// Stats counts the calls the model made as AGENT__TOOL since the node
	// started (Name is the tool's own name).
	Stats ToolStatus `json:"stats"`
}

// Agents gathers what GET /v1/agents answers.
func (n *Node) Agents() AgentList {
	m := n.Metrics()
	cat := n.Catalog()
	out := AgentList{Agents: make([]AgentDetail, 0, len(cat.Agents))}
	for _, a := range cat.Agents {
		d := AgentDetail{ID: a.ID, Online: a.Online, Capabilities: a.Capabilities, LastSeen: n.lastSeen(a), Listing: a.Listing,
			InFlight: n.edges.InFlight(a.ID), NotRecording: a.NotRecording, Tools: make([]ToolDetail, 0, len(a.Tools))}
		for _, t := range a.Tools {
			td := ToolDetail{Name: t.Name, Description: t.Description, Parameters: t.Parameters, TimeoutMS: t.TimeoutMS,
				Category: t.Category, Permissions: t.Permissions, Sandboxing: t.Sandboxing,
				Stats: toolStatus(t.Name, m.Tools[a.ID+actors.ToolSep+t.Name])}
			if td.Permissions == nil {
				td.Permissions = []string{}
			}
			d.Tools = append(d.Tools, td)
		}
		out.Agents = append(out.Agents, d)
	}
	sort.Slice(out.Agents, func(i, j int) bool { return out.Agents[i].ID < out.Agents[j].ID })
	return out
}

// lastSeen is when a was last heard from: the edge actor's gauge, which
// moves with every heartbeat, or the catalog's time when that is newer.
func (n *Node) lastSeen(a actors.AgentInfo) time.Time {
	if t := n.edges.LastSeen(a.ID); t.After(a.LastSeen) {
		return t
	}
	return a.LastSeen
}

// handleAgents answers the agent list with an ETag, and 304 when the
// client's If-None-Match names the same list: a console polling every
// second over an idle fleet gets empty answers.
func (n *Node) handleAgents(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(n.Agents()); err != nil {
		httpError(w, http.StatusInternalServerError, "encode agents: "+err.Error())
		return
	}
	h := fnv.New64a()
	h.Write(buf.Bytes())
	etag := fmt.Sprintf(`"%016x"`, h.Sum64())
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes()) // the client may be gone; nothing to do
}
