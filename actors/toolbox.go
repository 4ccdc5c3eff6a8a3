package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// Target says how to run one tool call the model asked for.
type Target struct {
	// AgentID is the edge agent the command goes to; empty for a local tool.
	AgentID string
	// Tool is the tool's name on the agent or in the local toolset.
	Tool string
	// Category picks the timeout rule (see Category).
	Category string
	// OwnTimeoutMS is the tool's own timeout; 0 means its category's default.
	OwnTimeoutMS int64
	// Schema is the JSON schema Args must satisfy; nil skips validation.
	Schema map[string]any
	// Args are the arguments to send; they may differ from what the model
	// wrote (edge_call's params).
	Args json.RawMessage
	// Prompt, when set, sends a "prompt" command to the agent's own tool
	// loop instead of a "tool" command.
	Prompt *wire.PromptPayload
	// Local, when set, runs the tool in this process instead of sending it.
	Local func(ctx context.Context, args json.RawMessage) skills.Output
	// Journal, when set with Local, records each run of the local tool
	// before it starts (RunJournal).
	Journal RunJournal
	// Permissions are the permissions a local tool declares (skill.toml);
	// the wire does not carry an agent tool's.
	Permissions []string
	// Group, when set, is the group the call was made to (groups.go):
	// AgentID is the member picked, and the call may move to another.
	Group *GroupRoute
	// Gated says AgentID speaks the start gate: the command asks for it,
	// so the call can move while it has not started.
	Gated bool
}

// Toolbox is what a conversation offers the model and how it resolves the
// calls the model makes. Implementations are safe for concurrent use.
type Toolbox interface {
	// Defs lists the tools to offer now, each name once. The list may be
	// shared with other callers: it is read, never changed.
	Defs() []llm.ToolDef
	// Resolve maps a call to its target, or to an error result the model
	// sees (unknown tool, offline agent, malformed edge_call).
	Resolve(call llm.ToolCall) (Target, *skills.Output)
}

// EdgeCallTool is the name of the one dynamic tool that reaches any online
// edge agent, in natural language or by action name.
const EdgeCallTool = "edge_call"

// Tool selection modes of an EdgeToolbox.
const (
	// ToolsDirect offers every tool of every online agent with its full
	// schema, named {agent}__{tool}, plus edge_call.
	ToolsDirect = "direct"
	// ToolsCompact offers edge_call alone; its description lists each
	// online agent's capabilities and tool names, so a small model is not
	// sent every schema on every call. Schemas come back in the error
	// message when a structured call gets its parameters wrong.
	ToolsCompact = "compact"
)

// EdgeToolbox offers the tools of the online edge agents.
type EdgeToolbox struct {
	Edges *Edges
	// Mode is ToolsDirect (default) or ToolsCompact.
	Mode string
	// Select, when it has an entry for an agent, limits that agent's tools
	// offered to the model to the listed names. Others are not offered and
	// are not callable.
	Select map[string][]string
	// Delegation, when set, gives the other agents' tools an agent's own
	// loop may use on the prompt an edge_call query sends it (nil: none).
	Delegation func(agentID string) *wire.Delegation

	// defs are the definitions Defs built last and the catalog snapshot
	// they were built from. Mode and Select must not change once Defs ran.
	defs atomic.Pointer[edgeDefs]
}

// edgeDefs are an EdgeToolbox's definitions for one catalog snapshot.
type edgeDefs struct {
	cat  *Catalog
	defs []llm.ToolDef
}

var _ Toolbox = (*EdgeToolbox)(nil)

// selected reports whether tool of agent is offered.
func (b *EdgeToolbox) selected(agent, tool string) bool {
	names, ok := b.Select[agent]
	if !ok {
		return true
	}
	for _, n := range names {
		if n == tool {
			return true
		}
	}
	return false
}

// delegation is what the prompt to agentID may use of other agents.
func (b *EdgeToolbox) delegation(agentID string) *wire.Delegation {
	if b.Delegation == nil {
		return nil
	}
	return b.Delegation(agentID)
}

// Defs implements Toolbox.
//
// The catalog is an immutable snapshot, replaced on every change: the
// definitions built from one are kept and returned again, shared (read,
// never written: see Toolbox), until it is replaced. Building them for
// every completion of every conversation was a third of the
// orchestrator's CPU under `evoclaw load` with 200 agents.
func (b *EdgeToolbox) Defs() []llm.ToolDef {
	cat := b.Edges.Catalog()
	if d := b.defs.Load(); d != nil && d.cat == cat {
		return d.defs
	}
	defs := b.build(cat)
	defs = defs[:len(defs):len(defs)] // an append by a reader copies
	b.defs.Store(&edgeDefs{cat: cat, defs: defs})
	return defs
}

// build makes the definitions of the callable agents of cat.
func (b *EdgeToolbox) build(cat *Catalog) []llm.ToolDef {
	callable := cat.Callable()
	if len(callable) == 0 {
		return nil // no agent, no edge tools: never offer a dead tool
	}
	var defs []llm.ToolDef
	if b.Mode != ToolsCompact {
		for _, a := range callable {
			for _, t := range a.Tools {
				if !b.selected(a.ID, t.Name) {
					continue
				}
				params := t.Parameters
				if params == nil {
					params = map[string]any{"type": "object", "properties": map[string]any{}}
				}
				desc := t.Description
				if a.Capabilities != "" {
					desc += " (on edge agent " + a.ID + ": " + a.Capabilities + ")"
				}
				defs = append(defs, llm.ToolDef{Name: a.ID + ToolSep + t.Name, Description: desc, Parameters: params})
			}
		}
		sort.SliceStable(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
		// An agent that lists a tool twice offers it once (the first).
		defs = slices.CompactFunc(defs, func(x, y llm.ToolDef) bool { return x.Name == y.Name })
	}
	return append(defs, b.edgeCallDef(callable))
}

// notListed is what edge_call's description says of an agent that never
// listed its tools: its capability line is all the model knows of them.
const notListed = " [actions not listed: name one its description mentions; the agent says if it has no such action]"

// presenceUnknown marks an agent known only from its retained capabilities.
const presenceUnknown = " (not heard from since this orchestrator started; it may be offline)"

// edgeCallDef builds the edge_call tool from the callable agents.
func (b *EdgeToolbox) edgeCallDef(callable []AgentInfo) llm.ToolDef {
	var sb strings.Builder
	sb.WriteString("Ask an edge agent to do something. Give agent_id and either query (natural language, answered by the agent's own model and tools) or action with params (runs that tool of the agent directly). Online edge agents:")
	var ids []any
	for _, a := range callable {
		ids = append(ids, a.ID)
		caps := a.Capabilities
		if caps == "" {
			caps = "edge agent"
		}
		fmt.Fprintf(&sb, "\n  - %s: %s", a.ID, caps)
		if a.PresenceUnknown {
			sb.WriteString(presenceUnknown)
		}
		if !a.Listed && !a.Listing {
			sb.WriteString(notListed)
		}
		if b.Mode == ToolsCompact {
			var actions []string
			for _, t := range a.Tools {
				if b.selected(a.ID, t.Name) {
					actions = append(actions, t.Name+requiredHint(t.Parameters))
				}
			}
			if len(actions) > 0 {
				fmt.Fprintf(&sb, " [actions: %s]", strings.Join(actions, ", "))
			}
		}
	}
	return llm.ToolDef{Name: EdgeCallTool, Description: sb.String(), Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"agent_id": map[string]any{"type": "string", "enum": ids, "description": "id of the online edge agent"},
			"query":    map[string]any{"type": "string", "description": "natural-language request; the agent's own model decides which of its tools to use"},
			"action":   map[string]any{"type": "string", "description": "name of one of the agent's tools, for a structured call"},
			"params":   map[string]any{"type": "object", "description": "arguments of the action"},
		},
		"required": []any{"agent_id"},
	}}
}

// requiredHint renders a tool's required parameters as "(a, b)".
func requiredHint(schema map[string]any) string {
	req := stringList(schema["required"])
	if len(req) == 0 {
		return ""
	}
	return "(" + strings.Join(req, ", ") + ")"
}

// Resolve implements Toolbox.
func (b *EdgeToolbox) Resolve(call llm.ToolCall) (Target, *skills.Output) {
	cat := b.Edges.Catalog()
	if call.Name == EdgeCallTool {
		return b.resolveEdgeCall(cat, call)
	}
	agent, info, ok := cat.Resolve(call.Name)
	if ok && !b.selected(agent.ID, info.Name) {
		ok = false
	}
	if agent.ID != "" && !agent.Callable() {
		return Target{}, toolError(wire.ErrAgentOffline, fmt.Sprintf("tool %q: edge agent %q is offline. %s", call.Name, agent.ID, b.available()))
	}
	if !ok && agent.ID != "" && !agent.Listed && b.Mode != ToolsCompact {
		// An agent that never listed its tools is called by name.
		if _, tool, _ := strings.Cut(call.Name, ToolSep); tool != "" && b.selected(agent.ID, tool) {
			return unlistedTarget(agent.ID, tool, call.Arguments), nil
		}
	}
	if !ok && agent.Online && agent.Listing {
		return Target{}, listingError(agent.ID)
	}
	if !ok || b.Mode == ToolsCompact {
		return Target{}, toolError(wire.ErrNotFound, fmt.Sprintf("tool %q not found. %s", call.Name, b.available()))
	}
	return Target{AgentID: agent.ID, Tool: info.Name, Category: Category(info.Category, info.Name),
		OwnTimeoutMS: info.TimeoutMS, Schema: info.Parameters, Args: call.Arguments}, nil
}

// edgeCallArgs are the arguments of edge_call.
type edgeCallArgs struct {
	AgentID string          `json:"agent_id"`
	Query   string          `json:"query"`
	Action  string          `json:"action"`
	Params  json.RawMessage `json:"params"`
}

func (b *EdgeToolbox) resolveEdgeCall(cat *Catalog, call llm.ToolCall) (Target, *skills.Output) {
	var a edgeCallArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return Target{}, toolError(wire.ErrInvalidParams, fmt.Sprintf("Invalid parameters for %q: arguments are not a JSON object (%v). Required: [agent_id]. Optional: [action, params, query].", EdgeCallTool, err))
	}
	if a.AgentID == "" || (a.Query == "" && a.Action == "") {
		return Target{}, toolError(wire.ErrInvalidParams, fmt.Sprintf("Invalid parameters for %q: give agent_id and either query or action. Required: [agent_id]. Optional: [action, params, query].", EdgeCallTool))
	}
	agent, known := cat.Agents[a.AgentID]
	if !known || !agent.Callable() {
		state := "unknown"
		if known {
			state = "offline"
		}
		return Target{}, toolError(wire.ErrAgentOffline, fmt.Sprintf("edge agent %q is %s. Online agents: %s", a.AgentID, state, onlineIDs(cat)))
	}
	if a.Action == "" {
		if !b.selected(agent.ID, EdgeCallTool) {
			// The agent's own loop would run any of its tools: a
			// selection without edge_call allows only its actions.
			return Target{}, toolError(wire.ErrPermissionDenied, fmt.Sprintf("edge agent %q takes no query here: [loop.select] limits it to %s. Call one of them with action instead.",
				agent.ID, listOrNone(b.Select[agent.ID])))
		}
		return Target{AgentID: agent.ID, Tool: EdgeCallTool, Category: CategoryEdgeCall,
			Args:   call.Arguments,
			Prompt: &wire.PromptPayload{Prompt: a.Query, EnableTools: true, Delegation: b.delegation(agent.ID)}}, nil
	}
	for _, t := range agent.Tools {
		if t.Name == a.Action && b.selected(agent.ID, t.Name) {
			args := a.Params
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			return Target{AgentID: agent.ID, Tool: t.Name, Category: Category(t.Category, t.Name),
				OwnTimeoutMS: t.TimeoutMS, Schema: t.Parameters, Args: args}, nil
		}
	}
	if !agent.Listed && b.selected(agent.ID, a.Action) {
		// It never listed its tools (the public agent may not know
		// tools_list): send the action and let the agent answer for it.
		return unlistedTarget(agent.ID, a.Action, a.Params), nil
	}
	if agent.Listing {
		return Target{}, listingError(agent.ID)
	}
	var names []string
	for _, t := range agent.Tools {
		if b.selected(agent.ID, t.Name) {
			names = append(names, t.Name)
		}
	}
	return Target{}, toolError(wire.ErrNotFound, fmt.Sprintf("edge agent %q has no action %q. Its actions: %s", agent.ID, a.Action, listOrNone(names)))
}

// unlistedTarget calls tool of an agent that never listed its tools: no
// schema to check, the category from the name, the category's timeout.
func unlistedTarget(agentID, tool string, params json.RawMessage) Target {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	return Target{AgentID: agentID, Tool: tool, Category: Category("", tool), Args: params}
}

// listingError answers a call of a tool an agent has not listed yet while
// it is listing its tools: busy (try again), not "no such tool", which
// would send a model looking elsewhere for a tool that exists.
func listingError(agentID string) *skills.Output {
	return toolError(wire.ErrBusy, fmt.Sprintf("edge agent %q has just (re)connected and is still listing its tools; try the call again in a moment", agentID))
}

// available lists what the model may call, for not-found messages.
func (b *EdgeToolbox) available() string {
	var names []string
	for _, d := range b.Defs() {
		names = append(names, d.Name)
	}
	if len(names) == 0 {
		return "Available tools: none (no edge agent is online)."
	}
	return "Available tools: " + strings.Join(names, ", ") + "."
}

func onlineIDs(cat *Catalog) string {
	var ids []string
	for _, a := range cat.Callable() {
		ids = append(ids, a.ID)
	}
	return listOrNone(ids)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func toolError(t wire.ErrorType, msg string) *skills.Output {
	out := skills.Failed(t, msg)
	return &out
}
