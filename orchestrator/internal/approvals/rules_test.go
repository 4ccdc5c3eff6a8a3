package approvals

import (
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

func TestGateRules(t *testing.T) {
	t.Parallel()
	rules := []Rule{
		{Tools: []string{"*__reboot"}},
		{Agents: []string{"pi-green*"}},
		{Tools: []string{"bash"}, Args: map[string]string{"command": "*rm *"}},
		{Permissions: []string{"gpio"}},
		{Categories: []string{"exec"}, Agents: []string{"pi-cellar"}},
	}
	prompt := &wire.PromptPayload{Prompt: "do it"}
	tools := []wire.ToolInfo{{Name: "reboot"}, {Name: "read_temp"}}
	for _, tt := range []struct {
		name   string
		target actors.Target
		tools  []wire.ToolInfo
		listed bool
		gated  bool
	}{
		{"agent tool by name", actors.Target{AgentID: "pi-1", Tool: "reboot"}, nil, true, true},
		{"other agent tool", actors.Target{AgentID: "pi-1", Tool: "read_temp"}, nil, true, false},
		{"agent by pattern", actors.Target{AgentID: "pi-greenhouse", Tool: "read_temp"}, nil, true, true},
		{"bash deleting, path with slashes", actors.Target{Tool: "bash", Args: json.RawMessage(`{"command":"sudo rm -rf /var/tmp"}`)}, nil, true, true},
		{"bash listing", actors.Target{Tool: "bash", Args: json.RawMessage(`{"command":"ls /"}`)}, nil, true, false},
		{"node tool with a permission", actors.Target{Tool: "led", Permissions: []string{"gpio"}}, nil, true, true},
		{"category and agent", actors.Target{AgentID: "pi-cellar", Tool: "sh", Category: "exec"}, nil, true, true},
		{"category, other agent", actors.Target{AgentID: "pi-attic", Tool: "sh", Category: "exec"}, nil, true, false},
		{"query to an agent with a gated tool", actors.Target{AgentID: "pi-1", Tool: "edge_call", Prompt: prompt}, tools, true, true},
		{"query to an agent without one", actors.Target{AgentID: "pi-1", Tool: "edge_call", Prompt: prompt},
			[]wire.ToolInfo{{Name: "read_temp"}}, true, false},
		{"query to a gated agent", actors.Target{AgentID: "pi-greenhouse", Tool: "edge_call", Prompt: prompt}, nil, true, true},
		{"query to an agent not listed yet", actors.Target{AgentID: "pi-1", Tool: "edge_call", Prompt: prompt}, nil, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			why := gate(rules, tt.target, tt.tools, tt.listed)
			if (why != "") != tt.gated {
				t.Fatalf("gated %q, want %v", why, tt.gated)
			}
		})
	}
	if err := (Rule{}).validate(); err == nil {
		t.Fatal("an empty rule validates")
	}
	if err := (Rule{Tools: []string{"["}}).validate(); err == nil {
		t.Fatal("a bad pattern validates")
	}
}
