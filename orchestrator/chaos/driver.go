package chaos

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// order is what a scenario asks the driver for, as the user message: one
// call of the mark tool on one agent.
type order struct {
	Agent   string  `json:"agent"`
	Tag     string  `json:"tag"`
	File    string  `json:"file"`
	Seconds float64 `json:"seconds"`
}

// driver is the scenarios' scripted model (not a language model): for a
// user message holding an order it calls the mark tool of the order's
// agent once, and answers the tool's message verbatim, so the caller sees
// either the tool's output or the loop's typed error text, followed by
// "[history N]": the user messages of the conversation it was given.
type driver struct{}

func (driver) Name() string { return "chaos driver (scripted, not a language model)" }

func (driver) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	if len(req.Messages) == 0 {
		return llm.Response{}, fmt.Errorf("chaos driver: no messages")
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		users := 0
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser {
				users++
			}
		}
		// The count shows whether a restarted node gave the model the
		// conversation's stored history.
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("%s [history %d]", last.Content, users)}}, nil
	}
	var o order
	if err := json.Unmarshal([]byte(last.Content), &o); err != nil {
		return llm.Response{}, fmt.Errorf("chaos driver: the user message must be an order: %w", err)
	}
	args, err := json.Marshal(map[string]any{"tag": o.Tag, "file": o.File, "seconds": o.Seconds})
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: "m1", Name: o.Agent + "__" + markTool, Arguments: args}}}}, nil
}
