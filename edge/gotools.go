package edge

import (
	"fmt"

	"github.com/evoclaw/evoclaw/skills"
)

// AddTools offers tools written in Go beside the agent's skills,
// built-ins and MCP tools: firmware registers what its device can do
// (read a sensor, open a door) without a separate binary. Each tool names
// its parameters (a JSON schema through skills.Tool.Parameters or
// GoTool.Schema), the permissions it needs (offered only when all are
// granted in [skills] permissions) and its timeout (skills.Tool.TimeoutMS;
// the caller's timeout and [tools] max_timeout bound it); its runs are
// audited like any tool's. Call it before Run.
func (a *Agent) AddTools(tools ...skills.GoTool) error {
	if !a.start.IsZero() {
		return fmt.Errorf("add tools: the agent is already running")
	}
	if err := a.tools.Add(tools...); err != nil {
		return fmt.Errorf("add tools: %w", err)
	}
	return nil
}
