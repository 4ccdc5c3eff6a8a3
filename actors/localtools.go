package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// LocalTools offers tools that run in this process: the skills, built-ins
// and MCP tools of a node's skills.Toolset. The orchestrator offers its own
// this way beside the edge agents' tools, and an edge agent's prompt loop
// offers its local tools.
type LocalTools struct {
	// List returns the tools to offer; nil offers none.
	List func() []skills.ToolDef
	// Run runs one tool with the call's timeout in milliseconds (0: the
	// tool's own default) and returns its result.
	Run func(ctx context.Context, name string, args json.RawMessage, timeoutMS int64) skills.Output
	// Off, when set, is the reason given for every call (tools disabled).
	Off string
	// Journal, when set, records every run before it starts, so that the
	// next start of the process can end and audit a run a crash cut
	// (RunJournal). Nil: runs are audited only when they end.
	Journal RunJournal
	// Denied, when set, answers a call of a tool this node knows but may
	// not run for lack of permissions (skills.Toolset.Denied); nil: none.
	Denied func(name string) *skills.Output
	// Generation, when set, changes whenever List may return something
	// else (skills.Toolset.Generation): the definitions are then built once
	// per generation and shared, so that the offers of completions find
	// them unchanged (offers.go). Nil: built on every call.
	Generation func() uint64
	// Reserved, when set, withholds a tool whose name the node keeps for
	// its own tools (edge_call, an agent's AGENT__TOOL): such a tool is
	// neither offered nor run from here, so that the name reaches the
	// node's own toolbox after this one. Nil: none.
	Reserved func(name string) bool
	// Withheld, when set, hears of each tool of List that Reserved
	// withholds, when the definitions are built (once per generation
	// with Generation): the node logs it. Nil: nothing.
	Withheld func(name string)

	built atomic.Pointer[localDefs]
}

// localDefs are the definitions LocalTools built in one generation.
type localDefs struct {
	gen  uint64
	defs []llm.ToolDef
}

// reserved reports whether name is withheld (Reserved).
func (l *LocalTools) reserved(name string) bool {
	return l.Reserved != nil && l.Reserved(name)
}

// deny implements denier.
func (l *LocalTools) deny(name string) *skills.Output {
	if l.Denied == nil || l.Off != "" || l.reserved(name) {
		return nil
	}
	return l.Denied(name)
}

// denier is a toolbox that can refuse a tool it knows but does not offer.
type denier interface {
	deny(name string) *skills.Output
}

var _ Toolbox = (*LocalTools)(nil)

// Defs implements Toolbox.
func (l *LocalTools) Defs() []llm.ToolDef {
	if l.List == nil || l.Off != "" {
		return nil
	}
	if l.Generation == nil {
		return l.build()
	}
	// The generation is read before the list: a change in between is seen
	// as a newer generation on the next call.
	gen := l.Generation()
	if b := l.built.Load(); b != nil && b.gen == gen {
		return b.defs
	}
	defs := l.build()
	defs = defs[:len(defs):len(defs)] // an append by a reader copies
	l.built.Store(&localDefs{gen: gen, defs: defs})
	return defs
}

func (l *LocalTools) build() []llm.ToolDef {
	var defs []llm.ToolDef
	for _, d := range l.List() {
		if l.reserved(d.Name) {
			if l.Withheld != nil {
				l.Withheld(d.Name)
			}
			continue
		}
		defs = append(defs, llm.ToolDef{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	return defs
}

// Resolve implements Toolbox.
func (l *LocalTools) Resolve(call llm.ToolCall) (Target, *skills.Output) {
	if l.Off != "" {
		return Target{}, toolError(wire.ErrNotFound, l.Off)
	}
	if l.List != nil {
		for _, d := range l.List() {
			if d.Name != call.Name || l.reserved(d.Name) {
				continue
			}
			run := l.Run
			name := d.Name
			return Target{Tool: name, Category: Category(d.Evoclaw.Metadata["category"], name), OwnTimeoutMS: d.Evoclaw.TimeoutMS,
				Schema: d.Parameters, Args: call.Arguments, Permissions: d.Evoclaw.Permissions, Journal: l.Journal,
				Local: func(ctx context.Context, args json.RawMessage) skills.Output {
					// The loop's context carries the call's timeout.
					return run(ctx, name, args, 0)
				}}, nil
		}
	}
	if out := l.deny(call.Name); out != nil {
		return Target{}, out
	}
	return Target{}, toolError(wire.ErrNotFound, fmt.Sprintf("tool %q not found. Available tools: %s.", call.Name, defNames(l.Defs())))
}

// Toolboxes offers the tools of several toolboxes as one: a name goes to
// the first toolbox that offers it, else to the last one, which answers
// for names it knows but does not offer now (an offline agent's tools).
type Toolboxes []Toolbox

var _ Toolbox = Toolboxes(nil)

// Defs implements Toolbox; a name offered twice keeps its first toolbox.
func (t Toolboxes) Defs() []llm.ToolDef {
	all := make([][]llm.ToolDef, len(t))
	for i, b := range t {
		all[i] = b.Defs()
	}
	return mergeDefs(all)
}

// mergeDefs is what Toolboxes made of the boxes' definitions all offer: in
// their order, a name offered twice kept from its first box.
func mergeDefs(all [][]llm.ToolDef) []llm.ToolDef {
	n := 0
	for _, box := range all {
		n += len(box)
	}
	// Only the names of the boxes before the last are remembered: a box
	// offers each name once, and nothing comes after the last one to be
	// checked against it (the agents' tools, the longest list, come last).
	if n == 0 {
		return nil
	}
	seen := make(map[string]struct{}, n-len(all[len(all)-1]))
	defs := make([]llm.ToolDef, 0, n)
	for i, box := range all {
		last := i == len(all)-1
		for _, d := range box {
			if _, dup := seen[d.Name]; dup {
				continue
			}
			if !last {
				seen[d.Name] = struct{}{}
			}
			defs = append(defs, d)
		}
	}
	return defs
}

// Resolve implements Toolbox.
func (t Toolboxes) Resolve(call llm.ToolCall) (Target, *skills.Output) {
	if len(t) == 0 {
		return Target{}, toolError(wire.ErrNotFound, fmt.Sprintf("tool %q not found: no tools are offered", call.Name))
	}
	for _, b := range t[:len(t)-1] {
		for _, d := range b.Defs() {
			if d.Name == call.Name {
				return b.Resolve(call)
			}
		}
	}
	// No toolbox offers it: a toolbox that knows it but lacks the
	// permissions says so, in the design's words.
	for _, b := range t {
		if d, ok := b.(denier); ok {
			if out := d.deny(call.Name); out != nil {
				return Target{}, out
			}
		}
	}
	target, bad := t[len(t)-1].Resolve(call)
	if bad != nil && bad.ErrorType() == wire.ErrNotFound && !strings.Contains(bad.ErrorText(), "has no action") {
		bad = toolError(wire.ErrNotFound, fmt.Sprintf("tool %q not found. Available tools: %s.", call.Name, defNames(t.Defs())))
	}
	return target, bad
}

func defNames(defs []llm.ToolDef) string {
	names := make([]string, 0, len(defs))
	for _, d := range defs {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	return listOrNone(names)
}
