package actors

import (
	"fmt"
	"path"
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// Filter offers a subset of another toolbox's tools: what a scheduled job
// needs, so a small model sees only that. A call of anything else is
// refused as not found, whatever the model writes.
type Filter struct {
	Box Toolbox
	// Allow, when not empty, lists the model-visible names (or path.Match
	// patterns: "*__read_temp") that are offered; nothing else is.
	Allow []string
	// Agent, when set, is the only edge agent whose tools are offered and
	// that edge_call may reach; the node's own tools stay (subject to
	// Allow).
	Agent string
	// Edges tells agent tools from the node's own; needed with Agent.
	Edges *Edges
}

var _ Toolbox = (*Filter)(nil)

// allowed reports whether the model-visible name passes Allow.
func (f *Filter) allowed(name string) bool {
	if len(f.Allow) == 0 {
		return true
	}
	for _, p := range f.Allow {
		if ok, err := path.Match(p, name); err == nil && ok || p == name {
			return true
		}
	}
	return false
}

// otherAgent reports whether name is a tool of an agent other than
// f.Agent.
func (f *Filter) otherAgent(name string) bool {
	if f.Agent == "" || f.Edges == nil {
		return false
	}
	agent, _, ok := strings.Cut(name, ToolSep)
	if !ok || agent == f.Agent {
		return false
	}
	_, known := f.Edges.Catalog().Agents[agent]
	return known
}

// Defs implements Toolbox.
func (f *Filter) Defs() []llm.ToolDef {
	var out []llm.ToolDef
	for _, d := range f.Box.Defs() {
		if f.allowed(d.Name) && !f.otherAgent(d.Name) {
			out = append(out, d)
		}
	}
	return out
}

// Resolve implements Toolbox.
func (f *Filter) Resolve(call llm.ToolCall) (Target, *skills.Output) {
	if !f.allowed(call.Name) || f.otherAgent(call.Name) {
		return Target{}, toolError(wire.ErrNotFound, fmt.Sprintf("tool %q is not available to this task. Available tools: %s.",
			call.Name, defNames(f.Defs())))
	}
	t, bad := f.Box.Resolve(call)
	if bad == nil && f.Agent != "" && t.AgentID != "" && t.AgentID != f.Agent {
		return Target{}, toolError(wire.ErrNotFound, fmt.Sprintf("edge agent %q is not available to this task; it concerns %q only", t.AgentID, f.Agent))
	}
	return t, bad
}
