package edge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
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
