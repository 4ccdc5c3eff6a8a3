package actors

import (
	"reflect"
	"sync/atomic"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// offer is what one completion offers the model: the tool definitions
// under the names the model sees, the mapping back, and the definitions
// of each toolbox it was made from. It is never changed once made: every
// conversation that gets it shares it.
type offer struct {
	parts [][]llm.ToolDef
	names *toolNames
	tools []llm.ToolDef
}

// offers remembers the last offer made from a Toolboxes, so that the next
// completion whose toolboxes define the same tools gets it without merging
// and checking every name again: with hundreds of agents that work was a
// tenth of the orchestrator's CPU under load (docs/PERFORMANCE.md,
// "Scale"). The toolboxes are still asked on every completion, so an agent
// that went away is never offered. Safe for concurrent use.
type offers struct {
	last atomic.Pointer[offer]
}

// of returns the names and definitions a completion offers from box. The
// definitions are shared: callers must not change them.
func (o *offers) of(box Toolbox) (*toolNames, []llm.ToolDef) {
	boxes, ok := box.(Toolboxes)
	if !ok || len(boxes) == 0 {
		return newToolNames(box.Defs())
	}
	parts := make([][]llm.ToolDef, len(boxes))
	for i, b := range boxes {
		parts[i] = b.Defs()
	}
	if last := o.last.Load(); last != nil && sameParts(last.parts, parts) {
		return last.names, last.tools
	}
	names, tools := newToolNames(mergeDefs(parts))
	tools = tools[:len(tools):len(tools)] // an append by a reader copies
	o.last.Store(&offer{parts: parts, names: names, tools: tools})
	return names, tools
}

// sameParts reports whether a and b define the same tools, box by box: the
// same names and descriptions in the same order, with the same schema (the
// same map: a schema is never changed once offered). An equal schema in
// another map only misses the memo (LocalTools keeps its definitions per
// toolset generation so that it gives the same maps).
func sameParts(a, b [][]llm.ToolDef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if len(x) != len(y) {
			return false
		}
		if len(x) > 0 && &x[0] == &y[0] {
			continue // the same shared slice (EdgeToolbox's snapshot)
		}
		for j := range x {
			if x[j].Name != y[j].Name || x[j].Description != y[j].Description || !sameMap(x[j].Parameters, y[j].Parameters) {
				return false
			}
		}
	}
	return true
}

func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
