package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// EdgeToolbox.Defs builds the definitions once per catalog snapshot: the
// same snapshot gives the same definitions (a caller's changes to the
// slice it got do not leak into the next), and a changed catalog is
// seen at once.
func TestEdgeToolboxDefsFollowTheCatalog(t *testing.T) {
	edges := &Edges{cat: &catalogRef{}}
	tool := func(name string) wire.ToolInfo {
		return wire.ToolInfo{Name: name, Parameters: map[string]any{"type": "object"}}
	}
	edges.cat.store(AgentInfo{ID: "a", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("x")}, LastSeen: time.Now()})
	box := &EdgeToolbox{Edges: edges}
	names := func() string {
		var s string
		for _, d := range box.Defs() {
			s += d.Name + " "
		}
		return s
	}
	first := box.Defs()
	if got, want := names(), "a__x edge_call "; got != want {
		t.Fatalf("defs %q, want %q", got, want)
	}
	if box.defs.Load().cat != edges.Catalog() {
		t.Fatal("the definitions are not kept for the snapshot they were built from")
	}
	first[0].Name = "changed by a caller"
	if got, want := names(), "a__x edge_call "; got != want {
		t.Fatalf("after a caller changed its copy: %q, want %q", got, want)
	}
	edges.cat.store(AgentInfo{ID: "b", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("y")}, LastSeen: time.Now()})
	if got, want := names(), "a__x b__y edge_call "; got != want {
		t.Fatalf("after agent b came: %q, want %q", got, want)
	}
	edges.cat.store(AgentInfo{ID: "a", Online: false})
	if got, want := names(), "b__y edge_call "; got != want {
		t.Fatalf("after agent a left: %q, want %q", got, want)
	}
}

// BenchmarkEdgeToolboxDefs is what each completion asks of the edge
// toolbox under `evoclaw load`: the definitions of 200 agents with one
// tool each, the catalog unchanged between calls.
func BenchmarkEdgeToolboxDefs(b *testing.B) {
	edges := &Edges{cat: &catalogRef{}}
	for i := range 200 {
		edges.cat.store(AgentInfo{ID: fmt.Sprintf("load-%03d", i), Online: true, Listed: true, Capabilities: "simulated agent",
			Tools: []wire.ToolInfo{{Name: "noop", Parameters: map[string]any{"type": "object"}}}, LastSeen: time.Now()})
	}
	box := &EdgeToolbox{Edges: edges}
	b.ReportAllocs()
	for range b.N {
		if len(box.Defs()) != 201 {
			b.Fatal("wrong number of definitions")
		}
	}
}
