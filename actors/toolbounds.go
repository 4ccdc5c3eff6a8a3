package actors

import (
	"encoding/json"
	"fmt"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// Bounds of what one agent's tools list may put into every chat's
// request: the node offers every agent's tools to the model, so without
// them one agent listing 45,000 tools made each chat's request 11 MB and
// every chat fail on the model's context.
const (
	// MaxAgentTools is the most tools kept of one agent, in the order it
	// listed them (128 is also the most tools OpenAI's API takes).
	MaxAgentTools = 128
	// MaxToolDefBytes bounds one tool's definition: its name, description
	// and parameters' schema as JSON. A larger tool is left out.
	MaxToolDefBytes = 16 << 10
)

// boundTools keeps the tools of an agent's list within MaxToolDefBytes
// each and MaxAgentTools in all, and says what it left out ("" when
// nothing).
func boundTools(tools []wire.ToolInfo) (kept []wire.ToolInfo, why string) {
	kept = make([]wire.ToolInfo, 0, min(len(tools), MaxAgentTools))
	large := 0
	for _, t := range tools {
		if toolDefBytes(t) > MaxToolDefBytes {
			large++
			continue
		}
		if len(kept) < MaxAgentTools {
			kept = append(kept, t)
		}
	}
	over := len(tools) - large - len(kept)
	switch {
	case large > 0 && over > 0:
		why = fmt.Sprintf("%d tools larger than %d bytes and %d beyond the first %d left out", large, MaxToolDefBytes, over, MaxAgentTools)
	case large > 0:
		why = fmt.Sprintf("%d tools larger than %d bytes left out", large, MaxToolDefBytes)
	case over > 0:
		why = fmt.Sprintf("%d tools beyond the first %d left out", over, MaxAgentTools)
	}
	return kept, why
}

// toolDefBytes is the size of what the model would be sent of t.
func toolDefBytes(t wire.ToolInfo) int {
	n := len(t.Name) + len(t.Description)
	if n > MaxToolDefBytes {
		return n
	}
	b, err := json.Marshal(t.Parameters)
	if err != nil {
		return MaxToolDefBytes + 1
	}
	return n + len(b)
}
