package actors

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestPickLeastBusy drives a group's picks through sequences of loads:
// each step's loads are the members' calls in flight when a call is
// placed, and the pick is recorded as the group does.
func TestPickLeastBusy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   []string
		loads []map[string]int64 // one per pick
		want  []string
	}{
		{"one member", []string{"a"}, []map[string]int64{nil, nil, nil}, []string{"a", "a", "a"}},
		{"least busy wins whoever went last", []string{"a", "b", "c"},
			[]map[string]int64{{"a": 2, "c": 1}, {"a": 2, "c": 1}, {"a": 2, "c": 1}}, []string{"b", "b", "b"}},
		{"equals take turns", []string{"a", "b", "c"}, []map[string]int64{nil, nil, nil, nil}, []string{"a", "b", "c", "a"}},
		{"turns among the least busy only", []string{"a", "b", "c"},
			[]map[string]int64{{"a": 1}, {"a": 1}, {"a": 1}}, []string{"b", "c", "b"}},
		// Two members alternately busy: a rotation by a global turn
		// counter picked a, c, a, c, a and never b.
		{"no member passed over while others alternate", []string{"a", "b", "c"},
			[]map[string]int64{nil, {"a": 1}, {"c": 1}, {"a": 1}, {"c": 1}}, []string{"a", "b", "a", "c", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last, seq := map[string]uint64{}, uint64(0)
			for i, load := range tc.loads {
				got := pickLeastBusy(tc.ids, func(id string) int64 { return load[id] }, func(id string) uint64 { return last[id] })
				seq++
				last[got] = seq
				if got != tc.want[i] {
					t.Errorf("pick %d: %s, want %s (loads %v)", i, got, tc.want[i], load)
				}
			}
		})
	}
}

func TestGroupHas(t *testing.T) {
	g := Group{Name: "s", Members: []string{"pi-1", "rack-[ab]-*", "x?"}}
	for id, want := range map[string]bool{"pi-1": true, "pi-2": false, "rack-a-7": true, "rack-c-7": false, "x1": true, "x12": false} {
		if got := g.Has(id); got != want {
			t.Errorf("Has(%q) = %v, want %v", id, got, want)
		}
	}
}

// testEdges is an edge registry's catalog and gauges without actors.
func testEdges(agents ...AgentInfo) *Edges {
	e := &Edges{cat: &catalogRef{}, gauges: &gauges{}}
	for _, a := range agents {
		e.cat.store(a)
	}
	return e
}

func tool(name string, props ...string) wire.ToolInfo {
	p := map[string]any{}
	for _, n := range props {
		p[n] = map[string]any{"type": "string"}
	}
	return wire.ToolInfo{Name: name, Description: name + " tool", Parameters: map[string]any{"type": "object", "properties": p}}
}

func TestGroupToolboxSchemasAndChoice(t *testing.T) {
	edges := testEdges(
		AgentInfo{ID: "pi-1", Online: true, Listed: true, StartGate: true, Tools: []wire.ToolInfo{tool("temp", "unit"), tool("only1")}},
		AgentInfo{ID: "pi-2", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("temp", "unit")}},
		AgentInfo{ID: "pi-3", Online: true, Listed: true, StartGate: true, Tools: []wire.ToolInfo{tool("temp", "scale")}},
		AgentInfo{ID: "pi-4", Online: false, Listed: true, Tools: []wire.ToolInfo{tool("temp", "unit")}},
		AgentInfo{ID: "other", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("temp", "unit")}},
	)
	logs := &testenv.Buffer{}
	b := &GroupToolbox{Edges: edges, Groups: []Group{{Name: "sensors", Members: []string{"pi-*"}}, {Name: "narrow", Members: []string{"pi-1"}, Tools: []string{"temp"}}},
		Logger: logs.Logger(slog.LevelInfo)}
	var names []string
	for _, d := range b.Defs() {
		names = append(names, d.Name)
		if d.Name == "sensors__temp" && !strings.Contains(d.Description, "pi-1, pi-2)") {
			t.Errorf("description %q: want the members with the shared schema, pi-3 (other schema) and pi-4 (offline) left out", d.Description)
		}
	}
	if got := strings.Join(names, " "); got != "sensors__only1 sensors__temp narrow__temp" {
		t.Fatalf("offered %s", got)
	}
	b.Defs()
	if n := strings.Count(logs.String(), "agent=pi-3"); n != 1 || !strings.Contains(logs.String(), "schema differs") {
		t.Fatalf("pi-3's other schema logged %d times, want once:\n%s", n, logs.String())
	}
	seen := map[string]int{}
	for range 4 {
		target, bad := b.Resolve(llm.ToolCall{Name: "sensors__temp", Arguments: json.RawMessage(`{}`)})
		if bad != nil {
			t.Fatal(bad.ErrorText())
		}
		if target.Group == nil || target.Tool != "temp" || target.Gated != (target.AgentID == "pi-1") {
			t.Fatalf("target %+v", target)
		}
		seen[target.AgentID]++
	}
	if seen["pi-1"] != 2 || seen["pi-2"] != 2 {
		t.Fatalf("four idle picks went to %v, want two each to pi-1 and pi-2 (round robin)", seen)
	}
	// A busy member is skipped while another is idle.
	edges.gauges.of("pi-1").inFlight.Store(3)
	for range 3 {
		if target, _ := b.Resolve(llm.ToolCall{Name: "sensors__temp", Arguments: json.RawMessage(`{}`)}); target.AgentID != "pi-2" {
			t.Fatalf("picked %s while pi-1 has 3 in flight and pi-2 none", target.AgentID)
		}
	}
	// A move goes to a member not tried yet, with the call's schema.
	target, _ := b.Resolve(llm.ToolCall{Name: "sensors__temp", Arguments: json.RawMessage(`{}`)})
	if _, m, ok := target.Group.next(map[string]bool{"pi-2": true}, false); !ok || m.id != "pi-1" {
		t.Fatalf("move from pi-2: %v %v, want pi-1", m, ok)
	}
	if _, m, ok := target.Group.next(map[string]bool{"pi-1": true, "pi-2": true}, false); ok {
		t.Fatalf("move with every member tried went to %v (pi-3 has another schema)", m)
	}
	for name, want := range map[string]wire.ErrorType{"narrow__only1": wire.ErrNotFound, "nogroup__temp": wire.ErrNotFound, "sensors": wire.ErrNotFound} {
		if _, bad := b.Resolve(llm.ToolCall{Name: name}); bad == nil || bad.ErrorType() != want {
			t.Errorf("Resolve(%s) = %v, want %s", name, bad, want)
		}
	}
	edges.cat.store(AgentInfo{ID: "pi-1", Online: false})
	edges.cat.store(AgentInfo{ID: "pi-2", Online: false})
	if _, bad := b.Resolve(llm.ToolCall{Name: "narrow__temp"}); bad == nil || bad.ErrorType() != wire.ErrAgentOffline ||
		!strings.Contains(bad.ErrorText(), "no online member of group \"narrow\"") {
		t.Fatalf("all members offline: %v", bad)
	}
	views := b.Views()
	if len(views) != 2 || strings.Join(views[0].Online, ",") != "pi-3" || strings.Join(views[0].Tools, ",") != "temp" {
		t.Fatalf("views %+v", views)
	}
}

// TestGroupBySharedSkill: members = ["*"] with tools = [...] makes a group
// of whichever agents offer the shared skill's tool with its schema, as
// they come and go; their other tools stay out of it.
func TestGroupBySharedSkill(t *testing.T) {
	edges := testEdges(
		AgentInfo{ID: "kitchen", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("read_temp", "unit"), tool("lights")}},
		AgentInfo{ID: "cellar", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("read_temp", "unit")}},
		AgentInfo{ID: "garage", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("door")}},
	)
	b := &GroupToolbox{Edges: edges, Groups: []Group{{Name: "temps", Members: []string{"*"}, Tools: []string{"read_temp"}}}}
	offered := func() string {
		var names []string
		for _, d := range b.Defs() {
			names = append(names, d.Name)
		}
		return strings.Join(names, " ")
	}
	if got := offered(); got != "temps__read_temp" {
		t.Fatalf("offered %q, want only the shared skill's tool", got)
	}
	picks := map[string]bool{}
	for range 4 {
		target, bad := b.Resolve(llm.ToolCall{Name: "temps__read_temp", Arguments: json.RawMessage(`{}`)})
		if bad != nil {
			t.Fatal(bad.ErrorText())
		}
		picks[target.AgentID] = true
	}
	if len(picks) != 2 || !picks["kitchen"] || !picks["cellar"] {
		t.Fatalf("calls went to %v, want kitchen and cellar", picks)
	}
	// A board that installs the skill joins the group.
	edges.cat.store(AgentInfo{ID: "garage", Online: true, Listed: true, Tools: []wire.ToolInfo{tool("door"), tool("read_temp", "unit")}})
	edges.cat.store(AgentInfo{ID: "kitchen", Online: false})
	edges.cat.store(AgentInfo{ID: "cellar", Online: false})
	if target, bad := b.Resolve(llm.ToolCall{Name: "temps__read_temp", Arguments: json.RawMessage(`{}`)}); bad != nil || target.AgentID != "garage" {
		t.Fatalf("with only garage online offering it: %+v %v", target, bad)
	}
}
