package skills

import (
	"maps"
	"slices"
)

// Sources of a ToolDef.
const (
	// SourceSkill is a tool binary from a skill.toml.
	SourceSkill = "skill"
	// SourceBuiltin is a built-in tool implemented in Go (read, bash, ...).
	SourceBuiltin = "builtin"
	// SourceMCP is a tool of an MCP server.
	SourceMCP = "mcp"
)

// ExtensionKey is the key of the evoclaw extension in a tool definition's
// JSON. LLM providers ignore it; catalogues and operators read it.
const ExtensionKey = "x-evoclaw"

// ToolDef is what an agent offers an LLM for one tool: the function name,
// description and JSON Schema of its parameters, plus evoclaw's own facts
// about it under "x-evoclaw". Send Name, Description and Parameters to the
// provider; Evoclaw is for people and audits.
type ToolDef struct {
	// Name is the function name the LLM calls.
	Name string `json:"name"`
	// Description tells the LLM what the tool does.
	Description string `json:"description"`
	// Parameters is a JSON Schema of type object.
	Parameters map[string]any `json:"parameters"`
	// Evoclaw holds where the tool comes from and what it needs.
	Evoclaw Extension `json:"x-evoclaw"`
}

// Extension is evoclaw's metadata about a tool.
type Extension struct {
	// Source is SourceSkill, SourceBuiltin or SourceMCP.
	Source string `json:"source"`
	// Skill is the skill (or MCP server) the tool belongs to; empty for
	// built-ins.
	Skill string `json:"skill,omitempty"`
	// Version is the skill's version, when it has one.
	Version string `json:"version,omitempty"`
	// Permissions must all be granted for the tool to run.
	Permissions []string `json:"permissions,omitempty"`
	// Sandboxing is the tool's OS sandbox (none, bubblewrap, firejail).
	Sandboxing string `json:"sandboxing,omitempty"`
	// TimeoutMS is the tool's own timeout; 0 means the agent's default.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Metadata is the tool's free-form [tools.metadata].
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Def returns the tool's definition with source SourceSkill. The result
// is a fresh value the caller may modify.
func (t Tool) Def() ToolDef {
	return t.def(SourceSkill, "")
}

func (t Tool) def(source, version string) ToolDef {
	return ToolDef{
		Name:        t.Name,
		Description: t.Description,
		Parameters:  t.Schema(),
		Evoclaw: Extension{
			Source:      source,
			Skill:       t.Skill,
			Version:     version,
			Permissions: slices.Clone(t.Permissions),
			Sandboxing:  t.Sandboxing,
			TimeoutMS:   t.TimeoutMS,
			Metadata:    maps.Clone(t.Metadata),
		},
	}
}

// clone deep-copies d so that a cached definition can be handed out.
func (d ToolDef) clone() ToolDef {
	d.Parameters, _ = cloneValue(d.Parameters).(map[string]any)
	d.Evoclaw.Permissions = slices.Clone(d.Evoclaw.Permissions)
	d.Evoclaw.Metadata = maps.Clone(d.Evoclaw.Metadata)
	return d
}
