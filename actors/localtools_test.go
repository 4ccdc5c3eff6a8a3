package actors

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// TestReservedLocalNamesReachTheNodesTools: a local tool (a skill) named
// like the node's own tools is neither offered nor run, nor refused for
// lack of permissions: the call reaches the agent's tool or edge_call.
// Before Reserved, the local tool came first and took every such call.
func TestReservedLocalNamesReachTheNodesTools(t *testing.T) {
	obj := map[string]any{"type": "object"}
	ran := map[string]int{}
	local := &LocalTools{
		List: func() []skills.ToolDef {
			return []skills.ToolDef{{Name: "clock", Parameters: obj}, {Name: EdgeCallTool, Parameters: obj}, {Name: "pi" + ToolSep + "read", Parameters: obj}}
		},
		Run: func(_ context.Context, name string, _ json.RawMessage, _ int64) skills.Output {
			ran[name]++
			return skills.Output{}
		},
		// A tool this node knows but may not run: here every name.
		Denied: func(name string) *skills.Output {
			return toolError(wire.ErrPermissionDenied, name+" needs a permission")
		},
		Reserved: func(name string) bool { return name == EdgeCallTool || strings.Contains(name, ToolSep) },
	}
	var withheld []string
	local.Withheld = func(name string) { withheld = append(withheld, name) }
	edges := &Edges{cat: &catalogRef{}}
	edges.cat.store(AgentInfo{ID: "pi", Online: true, Listed: true, LastSeen: time.Now(),
		Tools: []wire.ToolInfo{{Name: "read", Parameters: obj}}})
	boxes := Toolboxes{local, &EdgeToolbox{Edges: edges}}

	offered := map[string]int{}
	for _, d := range boxes.Defs() {
		offered[d.Name]++
	}
	if offered["clock"] != 1 {
		t.Errorf("the local tool clock is offered %d times: %v", offered["clock"], offered)
	}
	for _, name := range []string{EdgeCallTool, "pi" + ToolSep + "read"} {
		if offered[name] != 1 {
			t.Errorf("%s offered %d times, want once (the node's): %v", name, offered[name], offered)
		}
		if out := local.deny(name); out != nil {
			t.Errorf("a reserved name is refused by the local box: %s", out.ErrorText())
		}
	}
	for _, tc := range []struct {
		name      string
		wantAgent string // the call goes to this agent; "" runs locally
	}{
		{"clock", ""},
		{"pi" + ToolSep + "read", "pi"},
	} {
		target, bad := boxes.Resolve(llm.ToolCall{Name: tc.name, Arguments: json.RawMessage(`{}`)})
		if bad != nil {
			t.Fatalf("resolve %s: %s", tc.name, bad.ErrorText())
		}
		if target.AgentID != tc.wantAgent || (target.Local != nil) != (tc.wantAgent == "") {
			t.Errorf("resolve %s: agent %q, local %v; want agent %q", tc.name, target.AgentID, target.Local != nil, tc.wantAgent)
		}
	}
	target, bad := boxes.Resolve(llm.ToolCall{Name: EdgeCallTool, Arguments: json.RawMessage(`{"agent_id":"pi","action":"read","parameters":{}}`)})
	if bad != nil || target.AgentID != "pi" || target.Local != nil {
		t.Fatalf("edge_call resolved to agent %q, local %v, error %v", target.AgentID, target.Local != nil, bad)
	}
	if len(ran) != 0 {
		t.Fatalf("reserved local tools ran: %v", ran)
	}
	// Withheld hears of the local tools withheld, not of every call of
	// a reserved name (an agent's tools are called by such names).
	for _, name := range withheld {
		if name != EdgeCallTool && name != "pi"+ToolSep+"read" {
			t.Fatalf("withheld %q, which the local box does not have: %v", name, withheld)
		}
	}
	n := len(withheld)
	if n == 0 {
		t.Fatal("Withheld never heard of the withheld tools")
	}
	boxes.Resolve(llm.ToolCall{Name: "pi" + ToolSep + "read", Arguments: json.RawMessage(`{}`)})
	boxes.Resolve(llm.ToolCall{Name: "pi" + ToolSep + "other", Arguments: json.RawMessage(`{}`)})
	if slicesContain(withheld[n:], "pi"+ToolSep+"other") {
		t.Fatalf("a call of an agent's tool was reported withheld: %v", withheld[n:])
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
