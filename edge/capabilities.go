package edge

import (
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// roles names what an agent is, by agent_type; any other type is an
// "edge agent".
var roles = map[string]string{
	"sensor":     "sensor node",
	"monitor":    "sensor node",
	"trader":     "trading agent",
	"governance": "governance agent",
	"desktop":    "desktop agent",
}

// DefaultCapabilities is the start of the capability line of an agent that
// states none: its id and what kind of agent it is ("pi-1 sensor node").
// CapabilityLine adds what it offers.
func DefaultCapabilities(id, agentType string) string {
	role, ok := roles[agentType]
	if !ok {
		role = "edge agent"
	}
	return id + " " + role
}

// CapabilityLine is the capability line of an agent that states none,
// built from the tools it offers, so that it never promises one it does
// not: "pi-1 sensor node — tools: cpu_temp, read, webfetch". It fits
// wire.MaxCapabilitiesLen, naming how many tools it left out.
func CapabilityLine(id, agentType string, tools []string) string {
	head := DefaultCapabilities(id, agentType)
	if len(tools) == 0 {
		return head + " — no tools offered"
	}
	line := head + " — tools: "
	for i, t := range tools {
		more := fmt.Sprintf(", and %d more", len(tools)-i)
		sep := ""
		if i > 0 {
			sep = ", "
		}
		if len(line)+len(sep)+len(t)+len(", and 9999 more") > wire.MaxCapabilitiesLen {
			return line + strings.TrimPrefix(more, ",")
		}
		line += sep + t
	}
	return line
}

// capabilities is the line the agent advertises: its configured one, else
// one built from the tools it offers now.
func (a *Agent) capabilities() string {
	if a.cfg.Capabilities != "" {
		return a.cfg.Capabilities
	}
	return CapabilityLine(a.cfg.AgentID, a.cfg.AgentType, a.tools.Names())
}
