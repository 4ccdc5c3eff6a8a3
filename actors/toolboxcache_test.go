package actors

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// EdgeToolbox.Defs builds the definitions once per catalog snapshot: the
// same snapshot gives the same definitions (shared; a caller's append to
// the list it got does not leak into the next), and a changed catalog is
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
	// The definitions are shared and read only; an append by a caller
	// copies them and leaves the kept ones as they were.
	if again := box.Defs(); &again[0] != &first[0] {
		t.Fatal("the same snapshot gave new definitions, not the kept ones")
	}
	_ = append(first, llm.ToolDef{Name: "appended by a caller"})
	if got, want := names(), "a__x edge_call "; got != want {
		t.Fatalf("after a caller appended to its list: %q, want %q", got, want)
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

// defsBox offers fixed definitions.
type defsBox []string

func (b defsBox) Defs() []llm.ToolDef {
	var d []llm.ToolDef
	for _, n := range b {
		d = append(d, llm.ToolDef{Name: n})
	}
	return d
}

func (b defsBox) Resolve(llm.ToolCall) (Target, *skills.Output) { return Target{}, nil }

// Toolboxes offer each name once, the first box's, in box order; an
// agent that lists a tool twice offers it once.
func TestToolboxesOfferEachNameOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		boxes Toolboxes
		want  string
	}{
		{"none", Toolboxes{}, ""},
		{"empty boxes", Toolboxes{defsBox{}, defsBox{}}, ""},
		{"one", Toolboxes{defsBox{"a", "b"}}, "a b"},
		{"disjoint", Toolboxes{defsBox{"a"}, defsBox{"b"}, defsBox{"c", "d"}}, "a b c d"},
		{"the first box wins", Toolboxes{defsBox{"a", "b"}, defsBox{"b", "c"}, defsBox{"a", "c", "e"}}, "a b c e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			defs := tc.boxes.Defs()
			for _, d := range defs {
				got = append(got, d.Name)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("defs %v, want %q", got, tc.want)
			}
			if tc.want == "" && defs != nil {
				t.Error("no tools must be nil, not an empty list (a provider may refuse an empty tools array)")
			}
		})
	}
	edges := &Edges{cat: &catalogRef{}}
	edges.cat.store(AgentInfo{ID: "a", Online: true, Listed: true, LastSeen: time.Now(),
		Tools: []wire.ToolInfo{{Name: "x", Description: "first"}, {Name: "x", Description: "again"}, {Name: "w"}}})
	var got []string
	for _, d := range (&EdgeToolbox{Edges: edges}).Defs() {
		got = append(got, d.Name+":"+d.Description)
	}
	if !strings.HasPrefix(strings.Join(got, " "), "a__w: a__x:first edge_call:") || len(got) != 3 {
		t.Errorf("an agent listing x twice offers %v", got)
	}
}
