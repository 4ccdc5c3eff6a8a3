// Package approvals is the approval gate of a node: rules that name the
// tool calls needing a person's decision, and the durable queue those
// calls wait in. The conversation actor asks Gate for every call it is
// about to run (actors.Approver) and waits off its mailbox; approvers
// decide over the HTTP API or the CLI, and see the queue on MQTT too.
//
// A decision is durable before anyone acts on it, names who made it, and
// is audited with the request as chained events. A timeout is a denial.
// Pending approvals do not outlive the process that waits for them: at
// start, Open denies every approval left pending (decided_by "restart").
//
// # Concurrency
//
// A Gate is safe for concurrent use. Its waiters map is guarded by a
// mutex; the store serialises decisions, so an approval is decided once.
package approvals

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// Rule names calls that need approval. A rule matches a call when every
// field it sets matches (any entry of a list will do); a call needs
// approval when any rule matches.
type Rule struct {
	// Tools are names or path.Match patterns: "AGENT__TOOL" for an edge
	// agent's tool ("*__reboot"), the plain name for the node's own
	// ("bash"), "edge_call" for every natural-language edge_call query.
	Tools []string `toml:"tools" json:"tools,omitempty"`
	// Agents are agent ids or patterns: any tool of these agents, and any
	// edge_call query to them.
	Agents []string `toml:"agents" json:"agents,omitempty"`
	// Categories are tool categories (exec, file, web, git, other).
	Categories []string `toml:"categories" json:"categories,omitempty"`
	// Permissions match the node's own tools that declare any of them in
	// skill.toml; the wire does not carry an agent tool's permissions.
	Permissions []string `toml:"permissions" json:"permissions,omitempty"`
	// Args maps a parameter name to a glob on its value (a string as it
	// is, anything else as JSON text): '*' matches any text, '/' included,
	// '?' one character. Every entry must match.
	Args map[string]string `toml:"args" json:"args,omitempty"`
}

// validate reports a rule that matches nothing or everything by mistake.
func (r Rule) validate() error {
	if len(r.Tools)+len(r.Agents)+len(r.Categories)+len(r.Permissions)+len(r.Args) == 0 {
		return errors.New("sets none of tools, agents, categories, permissions, args")
	}
	for _, p := range slicesConcat(r.Tools, r.Agents, r.Categories, r.Permissions) {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return fmt.Errorf("pattern %q: %v", p, err)
		}
	}
	for k := range r.Args {
		if k == "" {
			return errors.New("args: empty parameter name")
		}
	}
	return nil
}

func slicesConcat(ss ...[]string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s...)
	}
	return out
}

// anyMatch reports whether name matches any of patterns.
func anyMatch(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

// call is what a rule looks at.
type call struct {
	name        string // AGENT__TOOL or the node's tool name
	agent       string
	category    string
	permissions []string
	args        map[string]any // nil: unknown (matches any Args)
}

// matches reports whether r matches c.
func (r Rule) matches(c call) bool {
	if len(r.Tools) > 0 && !anyMatch(r.Tools, c.name) {
		return false
	}
	if len(r.Agents) > 0 && (c.agent == "" || !anyMatch(r.Agents, c.agent)) {
		return false
	}
	if len(r.Categories) > 0 && !anyMatch(r.Categories, c.category) {
		return false
	}
	if len(r.Permissions) > 0 {
		ok := false
		for _, p := range c.permissions {
			ok = ok || anyMatch(r.Permissions, p)
		}
		if !ok {
			return false
		}
	}
	if c.args == nil {
		return true
	}
	for k, p := range r.Args {
		v, ok := c.args[k]
		if !ok {
			return false
		}
		s, isStr := v.(string)
		if !isStr {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		if !glob(p, s) {
			return false
		}
	}
	return true
}

// describe renders r for a reason text.
func (r Rule) describe(i int) string {
	var parts []string
	add := func(k string, v []string) {
		if len(v) > 0 {
			parts = append(parts, k+"="+strings.Join(v, ","))
		}
	}
	add("tools", r.Tools)
	add("agents", r.Agents)
	add("categories", r.Categories)
	add("permissions", r.Permissions)
	for k, p := range r.Args {
		parts = append(parts, "args."+k+"="+p)
	}
	return fmt.Sprintf("approvals rule %d (%s)", i+1, strings.Join(parts, " "))
}

// gate returns why the call to t needs approval, or "". tools lists the
// tools of t's agent, for an edge_call query.
func gate(rules []Rule, t actors.Target, tools []wire.ToolInfo, listed bool) string {
	if t.Prompt != nil {
		return gatePrompt(rules, t, tools, listed)
	}
	c := call{name: t.Tool, agent: t.AgentID, category: t.Category, permissions: t.Permissions}
	if t.AgentID != "" {
		c.name = t.AgentID + actors.ToolSep + t.Tool
	}
	var args map[string]any
	if json.Unmarshal(t.Args, &args) != nil || args == nil {
		args = map[string]any{}
	}
	c.args = args
	for i, r := range rules {
		if r.matches(c) {
			return r.describe(i)
		}
	}
	return ""
}

// gatePrompt decides an edge_call query: the agent's own model would
// choose among its tools, so the query needs approval when a rule names
// edge_call or could match any of the agent's tools (arguments unknown).
// An agent whose tools are not listed yet is gated when any rule could
// apply to agent tools at all.
func gatePrompt(rules []Rule, t actors.Target, tools []wire.ToolInfo, listed bool) string {
	for i, r := range rules {
		if len(r.Permissions) == 0 && r.matches(call{name: actors.EdgeCallTool, agent: t.AgentID, category: actors.CategoryEdgeCall}) {
			return fmt.Sprintf("%s: an edge_call query to %s", r.describe(i), t.AgentID)
		}
	}
	var gated []string
	first := -1
	for i, r := range rules {
		if len(r.Permissions) > 0 && len(r.Tools)+len(r.Agents)+len(r.Categories) == 0 {
			continue // permissions are known for the node's own tools only
		}
		if !listed {
			return fmt.Sprintf("%s: an edge_call query to %s, whose tools are not listed yet", r.describe(i), t.AgentID)
		}
		for _, tool := range tools {
			c := call{name: t.AgentID + actors.ToolSep + tool.Name, agent: t.AgentID, category: actors.Category(tool.Category, tool.Name)}
			if len(r.Permissions) == 0 && r.matches(c) {
				gated = append(gated, c.name)
				if first < 0 {
					first = i
				}
			}
		}
	}
	if len(gated) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: an edge_call query to %s, whose own model could run gated tools (%s)", rules[first].describe(first),
		t.AgentID, strings.Join(dedupe(gated), ", "))
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// glob reports whether s matches pattern, where '*' is any text (slashes
// included: arguments are paths and command lines) and '?' one character.
func glob(pattern, s string) bool {
	var b strings.Builder
	b.WriteString("(?s)^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(s)
}
