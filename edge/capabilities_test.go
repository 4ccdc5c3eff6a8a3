package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

func TestCapabilityLine(t *testing.T) {
	for _, tc := range []struct {
		typ   string
		tools []string
		want  string
	}{
		{"monitor", []string{"cpu_temp", "read"}, "pi-1 sensor node — tools: cpu_temp, read"},
		{"sensor", nil, "pi-1 sensor node — no tools offered"},
		{"desktop", []string{"bash"}, "pi-1 desktop agent — tools: bash"},
		{"trader", []string{"quote"}, "pi-1 trading agent — tools: quote"},
		{"governance", []string{"vote"}, "pi-1 governance agent — tools: vote"},
		{"robot", []string{"move"}, "pi-1 edge agent — tools: move"},
	} {
		if got := CapabilityLine("pi-1", tc.typ, tc.tools); got != tc.want {
			t.Errorf("CapabilityLine(%s, %v) = %q, want %q", tc.typ, tc.tools, got, tc.want)
		}
	}
	var many []string
	for i := range 300 {
		many = append(many, fmt.Sprintf("tool_%03d", i))
	}
	got := CapabilityLine("pi-1", "monitor", many)
	if len(got) > wire.MaxCapabilitiesLen || !strings.HasSuffix(got, "more") {
		t.Fatalf("long line: %d bytes, %q", len(got), got[len(got)-40:])
	}
}

// TestAdvertisedCapabilities: an agent that states no capabilities
// advertises the tools it offers, no more: a read-only agent does not
// claim a camera.
func TestAdvertisedCapabilities(t *testing.T) {
	p := startAgent(t, func(c *Config) {
		c.AgentType = "sensor"
		c.Skills.Dirs = nil
		c.Skills.Permissions = []string{"file_read"}
		c.Builtin = toolbox.Builtin{Groups: []string{"read-only"}, Workspace: t.TempDir()}
	})
	var caps wire.Capabilities
	got := make(chan []byte, 1)
	if err := p.Client().Subscribe(wire.CapabilitiesTopic("pi-t"), 1, func(m mqttc.Message) {
		select {
		case got <- m.Payload:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		select {
		case b := <-got:
			return json.Unmarshal(b, &caps) == nil
		default:
			return false
		}
	}, "retained capabilities")
	if caps.Capabilities != "pi-t sensor node — tools: find, glob, grep, read" {
		t.Fatalf("capabilities %q", caps.Capabilities)
	}
}

// TestCapabilitiesFollowTools: when the tools an agent offers change after
// it advertised them (an MCP server's restart listed others), it
// advertises its new capability line at its next heartbeat. Before, the
// line kept the tools of its start until the agent reconnected.
func TestCapabilitiesFollowTools(t *testing.T) {
	url := mqtttest.StartEmbedded(t)
	cfg := Config{AgentID: "pi-c", AgentType: "sensor", DataDir: t.TempDir(), MQTT: MQTTConf{Broker: url}}
	cfg.HeartbeatInterval.Duration = 50 * time.Millisecond
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 10*time.Second)
	var (
		mu   sync.Mutex // guards last
		last string
	)
	c := mqtttest.Connect(t, mqttc.Options{BrokerURL: url, ClientID: "watch-caps"})
	if err := c.Subscribe(wire.CapabilitiesTopic("pi-c"), 1, func(m mqttc.Message) {
		var caps wire.Capabilities
		if json.Unmarshal(m.Payload, &caps) == nil {
			mu.Lock()
			last = caps.Capabilities
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	advertised := func(want string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return last == want
		}
	}
	testenv.Eventually(t, 10*time.Second, advertised("pi-c sensor node — no tools offered"), "the first capability line")
	run := func(context.Context, map[string]any) skills.Output { return skills.Output{} }
	if err := a.tools.Replace(skills.SourceMCP, "srv", skills.GoTool{Tool: skills.Tool{Name: "srv__new", Skill: "srv"}, Source: skills.SourceMCP, Run: run}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, advertised("pi-c sensor node — tools: srv__new"), "the line naming the new tool")
}
