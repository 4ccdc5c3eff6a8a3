package actors

import (
	"encoding/json"
	"fmt"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// plannedCall is one tool call of the current turn: either a spec to run or a
// result known at once (refused before anything was sent).
type plannedCall struct {
	spec      *callSpec
	immediate *skills.Output
	agentID   string
	// resolved: the call names a tool the turn offers (Metrics counts it
	// under its name; others share NotOfferedTool).
	resolved bool
}

// prepare resolves one call and checks its arguments.
func (c *conversation) prepare(call llm.ToolCall) plannedCall {
	if n := len(call.Arguments); n > MaxArgsBytes {
		return plannedCall{immediate: toolError(wire.ErrInvalidParams, fmt.Sprintf(
			"Invalid parameters for %q: the arguments are %d bytes, more than the %d a call may carry; pass large content in smaller parts or by reference (a file).",
			call.Name, n, MaxArgsBytes))}
	}
	target, bad := c.cur.toolbox.Resolve(call)
	if bad != nil {
		return plannedCall{immediate: bad, agentID: target.AgentID}
	}
	if call.ArgumentsError != "" && target.Prompt == nil && string(target.Args) == string(call.Arguments) {
		return plannedCall{agentID: target.AgentID, resolved: true, immediate: toolError(wire.ErrInvalidParams, fmt.Sprintf(
			"Invalid parameters for %q: the arguments are not valid JSON (%s): %s. %s", call.Name, call.ArgumentsError,
			truncate(call.ArgumentsText(), 200), paramLists(target.Schema)))}
	}
	var args map[string]any
	if err := json.Unmarshal(target.Args, &args); err != nil || args == nil {
		return plannedCall{agentID: target.AgentID, resolved: true, immediate: toolError(wire.ErrInvalidParams, fmt.Sprintf(
			"Invalid parameters for %q: arguments are not a JSON object: %s. %s", call.Name, truncate(string(target.Args), 200), paramLists(target.Schema)))}
	}
	if msg := duplicateKeyError(call, target.Args); msg != "" {
		return plannedCall{agentID: target.AgentID, resolved: true, immediate: toolError(wire.ErrInvalidParams, msg)}
	}
	if msg := c.o.schemas.validateArgs(call.Name, target.Schema, args); msg != "" {
		return plannedCall{agentID: target.AgentID, resolved: true, immediate: toolError(wire.ErrInvalidParams, msg)}
	}
	timeout := toolTimeout(c.o.TimeoutRules, target.Category, callOwnTimeoutMS(target, args))
	prefix := "tool"
	if target.Prompt != nil {
		prefix = "prompt"
	}
	requestID := RequestID(prefix, c.o.RequestTag, c.o.Now().UnixNano(), requestSeq.Add(1))
	if target.Local != nil && c.cur.origin != "" {
		// Nothing goes on the wire: audit the run under the request that
		// started the chat, which links it to the caller's record.
		requestID = c.cur.origin
	}
	s := &callSpec{convID: c.id, call: call, target: target, agentID: target.AgentID, tool: target.Tool,
		requestID: requestID, runID: target.runID(c.o), timeout: timeout, o: c.o, caller: c.caller()}
	if c.o.Edges != nil {
		s.edges = c.o.Edges.PID
	}
	return plannedCall{spec: s, agentID: target.AgentID, resolved: true}
}
