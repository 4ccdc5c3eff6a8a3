package edge

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/mcptools"
)

// TestAgentMCPTools runs a real MCP server (the one package mcptools tests
// with, built here) behind an edge agent: its tools appear in tools_list
// as server__tool and run for tool commands.
func TestAgentMCPTools(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../skills/mcptools/testdata/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("build MCP server: %v\n%s", err, out)
	}
	p := startAgent(t, func(c *Config) {
		c.Tools.MCPServers = map[string]mcptools.ServerConfig{"lab": {Command: bin}}
	})
	p.Send(`{"command":"tools_list","request_id":"m0"}`)
	l, err := wire.DecodeToolsList(p.Await("m0"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ti := range l.Tools {
		found = found || ti.Name == "lab__echo"
	}
	if !found {
		t.Fatalf("tools_list lacks lab__echo: %v", l.Tools)
	}
	p.Send(`{"command":"tool","payload":{"tool":"lab__echo","parameters":{"text":"from the pi"}},"request_id":"m1"}`)
	res, err := wire.DecodeToolResult(p.Await("m1"))
	if err != nil || res.Status != wire.StatusSuccess || res.Result != "echo: from the pi" {
		t.Fatalf("lab__echo = %+v, %v", res, err)
	}
	p.Send(`{"command":"tool","payload":{"tool":"lab__fail","parameters":{}},"request_id":"m2"}`)
	if res, _ := wire.DecodeToolResult(p.Await("m2")); res.ErrorType != wire.ErrExecutionFailed || res.Error != "the sensor is unplugged" {
		t.Fatalf("lab__fail = %+v", res)
	}
}
