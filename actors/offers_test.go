package actors

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// freshBox builds new definitions on every call, as LocalTools does, from
// what a test sets.
type freshBox struct {
	mu   sync.Mutex
	defs []llm.ToolDef
}

func (b *freshBox) set(defs ...llm.ToolDef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.defs = defs
}

func (b *freshBox) Defs() []llm.ToolDef {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]llm.ToolDef(nil), b.defs...)
}

func (b *freshBox) Resolve(llm.ToolCall) (Target, *skills.Output) { return Target{}, nil }

// TestOffersFollowTheToolboxes: what a completion is offered through the
// memo is what the toolboxes offer now, names mapped as newToolNames
// maps them, after every kind of change; unchanged toolboxes give the
// same shared offer.
func TestOffersFollowTheToolboxes(t *testing.T) {
	schema := map[string]any{"type": "object"}
	local := &freshBox{}
	local.set(llm.ToolDef{Name: "clock", Description: "time", Parameters: schema})
	edges := &Edges{cat: &catalogRef{}}
	agent := func(id string, tools ...string) AgentInfo {
		a := AgentInfo{ID: id, Online: true, Listed: true, LastSeen: time.Now()}
		for _, n := range tools {
			a.Tools = append(a.Tools, wire.ToolInfo{Name: n, Parameters: map[string]any{"type": "object"}})
		}
		return a
	}
	edges.cat.store(agent("pi-1", "read"))
	boxes := Toolboxes{local, &EdgeToolbox{Edges: edges}}
	o := &offers{}

	check := func(step string, wantHit bool) {
		t.Helper()
		before := o.last.Load()
		names, tools := o.of(boxes)
		wantNames, wantTools := newToolNames(boxes.Defs())
		if !reflect.DeepEqual(tools, wantTools) {
			t.Fatalf("%s: offered %v, want %v", step, tools, wantTools)
		}
		if !reflect.DeepEqual(names.fromModel, wantNames.fromModel) {
			t.Fatalf("%s: names %v, want %v", step, names.fromModel, wantNames.fromModel)
		}
		if hit := before != nil && o.last.Load() == before; hit != wantHit {
			t.Fatalf("%s: memo hit %v, want %v", step, hit, wantHit)
		}
		if len(tools) != cap(tools) {
			t.Fatalf("%s: a reader's append would write into the shared offer", step)
		}
	}
	steps := []struct {
		name   string
		change func()
		hit    bool
	}{
		{"first", func() {}, false},
		{"nothing changed", func() {}, true},
		{"a local tool's description", func() { local.set(llm.ToolDef{Name: "clock", Description: "wall time", Parameters: schema}) }, false},
		{"unchanged again", func() {}, true},
		{"a local tool's schema", func() {
			local.set(llm.ToolDef{Name: "clock", Description: "wall time", Parameters: map[string]any{"type": "object"}})
		}, false},
		{"a local tool added", func() {
			local.set(llm.ToolDef{Name: "clock", Description: "wall time"}, llm.ToolDef{Name: "pi-1__read", Description: "shadows the agent's"})
		}, false},
		{"an agent came", func() { edges.cat.store(agent("pi-2", "read", "write")) }, false},
		{"an agent left", func() { edges.cat.store(AgentInfo{ID: "pi-1", Online: false}) }, false},
		{"a name no provider takes", func() { edges.cat.store(agent("pi 3", "bad name!")) }, false},
		{"unchanged after renaming", func() {}, true},
	}
	// sameParts compares every field a definition has.
	if n := reflect.TypeOf(llm.ToolDef{}).NumField(); n != 3 {
		t.Fatalf("llm.ToolDef has %d fields: sameParts compares Name, Description and Parameters only", n)
	}
	for _, s := range steps {
		s.change()
		check(s.name, s.hit)
	}
	// A toolbox that is not a Toolboxes is offered as it is.
	names, tools := o.of(local)
	if want := local.Defs(); !reflect.DeepEqual(tools, want) || len(names.fromModel) != 0 {
		t.Fatalf("a single toolbox offered %v (names %v), want %v", tools, names.fromModel, want)
	}
}

// TestOffersUnderConcurrentChange: conversations ask for offers while the
// agents come and go; each offer is the tools of one catalog, whole.
func TestOffersUnderConcurrentChange(t *testing.T) {
	edges := &Edges{cat: &catalogRef{}}
	edges.cat.store(AgentInfo{ID: "a", Online: true, Listed: true, LastSeen: time.Now(),
		Tools: []wire.ToolInfo{{Name: "x", Parameters: map[string]any{"type": "object"}}}})
	boxes := Toolboxes{defsBox{"local"}, &EdgeToolbox{Edges: edges}}
	o := &offers{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, tools := o.of(boxes)
				var names []string
				for _, d := range tools {
					names = append(names, d.Name)
				}
				got := fmt.Sprint(names)
				if got != "[local a__x edge_call]" && got != "[local a__x b__y edge_call]" {
					t.Errorf("goroutine %d: offered %s", g, got)
					return
				}
			}
		}()
	}
	for i := range 200 {
		if i%2 == 0 {
			edges.cat.store(AgentInfo{ID: "b", Online: true, Listed: true, LastSeen: time.Now(),
				Tools: []wire.ToolInfo{{Name: "y", Parameters: map[string]any{"type": "object"}}}})
		} else {
			edges.cat.store(AgentInfo{ID: "b", Online: false})
		}
	}
	close(stop)
	wg.Wait()
}

// BenchmarkOffers is what each completion asks under `evoclaw load`: the
// node's own tools and 200 agents' with one tool each, unchanged between
// completions; NAME/merge is the same without the memo.
func BenchmarkOffers(b *testing.B) {
	edges := &Edges{cat: &catalogRef{}}
	for i := range 200 {
		edges.cat.store(AgentInfo{ID: fmt.Sprintf("load-%03d", i), Online: true, Listed: true, Capabilities: "simulated agent",
			Tools: []wire.ToolInfo{{Name: "noop", Parameters: map[string]any{"type": "object"}}}, LastSeen: time.Now()})
	}
	// The node's own tools, as its Go tools give them: the same schemas
	// on every call.
	local := &freshBox{}
	for _, n := range []string{"sessions_list", "sessions_send", "ask_user", "clock", "http_get", "read_file", "write_file", "shell", "todo", "memory"} {
		local.defs = append(local.defs, llm.ToolDef{Name: n, Description: "the node's own " + n, Parameters: map[string]any{"type": "object",
			"properties": map[string]any{"path": map[string]any{"type": "string", "description": "where"}, "limit": map[string]any{"type": "integer"}},
			"required":   []any{"path"}}})
	}
	boxes := Toolboxes{local, &EdgeToolbox{Edges: edges}}
	b.Run("memo", func(b *testing.B) {
		o := &offers{}
		b.ReportAllocs()
		for range b.N {
			if _, tools := o.of(boxes); len(tools) != 211 {
				b.Fatal("wrong number of definitions")
			}
		}
	})
	b.Run("merge", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, tools := newToolNames(boxes.Defs()); len(tools) != 211 {
				b.Fatal("wrong number of definitions")
			}
		}
	})
}

// TestLocalToolsKeptPerGeneration: with a Generation, LocalTools builds
// its definitions once per generation, so a completion's offer is reused
// although the toolset hands out fresh copies of its schemas; a new
// generation is offered at once.
func TestLocalToolsKeptPerGeneration(t *testing.T) {
	var gen atomic.Uint64
	name := atomic.Pointer[string]{}
	first := "clock"
	name.Store(&first)
	list := func() []skills.ToolDef { // fresh copies, as a skills.Toolset gives
		return []skills.ToolDef{{Name: *name.Load(), Description: "time", Parameters: map[string]any{"type": "object"}}}
	}
	local := &LocalTools{List: list, Generation: gen.Load}
	edges := &Edges{cat: &catalogRef{}}
	edges.cat.store(AgentInfo{ID: "pi", Online: true, Listed: true, LastSeen: time.Now(),
		Tools: []wire.ToolInfo{{Name: "read", Parameters: map[string]any{"type": "object"}}}})
	boxes := Toolboxes{local, &EdgeToolbox{Edges: edges}}
	o := &offers{}
	_, a := o.of(boxes)
	_, b := o.of(boxes)
	if &a[0] != &b[0] {
		t.Fatal("the same generation gave a new offer")
	}
	second := "wall_clock"
	name.Store(&second)
	gen.Add(1)
	_, c := o.of(boxes)
	if c[0].Name != "wall_clock" {
		t.Fatalf("after a new generation the offer starts with %q, want wall_clock", c[0].Name)
	}
	// Without a Generation every call builds afresh, as before.
	plain := &LocalTools{List: list}
	if x, y := plain.Defs(), plain.Defs(); sameMap(x[0].Parameters, y[0].Parameters) {
		t.Fatal("LocalTools without a Generation kept its definitions")
	}
}

// BenchmarkOffersWithLocalTools is BenchmarkOffers for a node with ten
// tools of its own from a skills.Toolset, which copies their schemas on
// every List: NAME/kept with the toolset's Generation (as the node runs),
// NAME/copied without it (every completion copies and merges).
func BenchmarkOffersWithLocalTools(b *testing.B) {
	edges := &Edges{cat: &catalogRef{}}
	for i := range 200 {
		edges.cat.store(AgentInfo{ID: fmt.Sprintf("load-%03d", i), Online: true, Listed: true, Capabilities: "simulated agent",
			Tools: []wire.ToolInfo{{Name: "noop", Parameters: map[string]any{"type": "object"}}}, LastSeen: time.Now()})
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{})
	for _, n := range []string{"read", "write", "edit", "ls", "grep", "find", "bash", "web_fetch", "todo_read", "todo_write"} {
		err := ts.Add(skills.GoTool{Tool: skills.Tool{Name: n, Description: "the node's own " + n, Parameters: skills.Parameters{
			Properties: map[string]skills.Param{"path": {Type: "string", Description: "where"}, "limit": {Type: "integer"}},
			Required:   []string{"path"}}},
			Run: func(context.Context, map[string]any) skills.Output { return skills.Output{} }})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		gen  func() uint64
	}{{"kept", ts.Generation}, {"copied", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			boxes := Toolboxes{&LocalTools{List: ts.Defs, Generation: tc.gen}, &EdgeToolbox{Edges: edges}}
			o := &offers{}
			b.ReportAllocs()
			for range b.N {
				if _, tools := o.of(boxes); len(tools) != 211 {
					b.Fatalf("%d definitions", len(tools))
				}
			}
		})
	}
}
