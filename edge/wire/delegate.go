package wire

import (
	"encoding/json"
	"fmt"
)

// Delegation is an evoclaw extension (docs/WIRE.md, "Delegation"): an edge
// agent's own tool loop uses tools of other agents through the
// orchestrator, as far as the orchestrator's [delegation] rules allow.
//
// The orchestrator offers them on the prompt command (PromptPayload's
// Delegation); the agent asks for one call with a report of type
// ReportDelegate on its own reports topic, and gets the result as a
// CmdDelegateResult command on its own commands topic. Both directions use
// the topics an agent already has, so the broker's per-agent ACL is
// unchanged.
const (
	// ReportDelegate is the report_type of a DelegateRequest.
	ReportDelegate = "delegate"
	// CmdDelegateResult is the command carrying a delegated call's result
	// (a ToolResult whose request_id is the DelegateRequest's).
	CmdDelegateResult = "delegate_result"
)

// Bounds of delegation messages, checked by the decoders.
const (
	// MaxRemoteTools bounds the tools one Delegation offers.
	MaxRemoteTools = 256
	// MaxDelegationChain bounds a chain of agents.
	MaxDelegationChain = 16
	// MaxDelegationToken bounds a delegation token.
	MaxDelegationToken = 128
	// MaxDelegateQuery bounds the query of a delegated prompt.
	MaxDelegateQuery = 64 << 10
)

// Delegation is what an agent's prompt loop may use of other agents, sent
// with the prompt.
type Delegation struct {
	// Token names this grant to the orchestrator; the agent sends it back
	// with every DelegateRequest. It is only good for the agent the prompt
	// went to. Required on the wire; empty only in an agent's audit copy.
	Token string `json:"token,omitempty"`
	// Chain is the agents whose loops led to this prompt, the agent it goes
	// to last (["pi1"] for a prompt from a chat; ["pi1","pi2"] when pi1's
	// loop asked pi2's). Informational: the orchestrator keeps its own.
	Chain []string `json:"chain"`
	// Tools are the other agents' tools the loop may call.
	Tools []RemoteTool `json:"tools"`
}

// RemoteTool is one tool of another agent a prompt loop may call.
type RemoteTool struct {
	AgentID string `json:"agent_id"`
	// Tool is the tool's name on that agent; empty when Prompt is set.
	Tool string `json:"tool,omitempty"`
	// Prompt marks the other agent's own tool loop: called with a query.
	Prompt      bool           `json:"prompt,omitempty"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	// TimeoutMS is how long the orchestrator gives the call (the tool's
	// timeout and its round trip); zero: not known.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// DelegateRequest is the payload of a ReportDelegate report: one call of
// another agent's tool (Tool and Parameters) or of its loop (Query).
type DelegateRequest struct {
	// RequestID is the caller's id for this call; the result carries it.
	RequestID string `json:"request_id"`
	// Token is the Delegation.Token of the prompt being answered.
	Token string `json:"token"`
	// AgentID is the agent whose tool is wanted.
	AgentID    string          `json:"agent_id"`
	Tool       string          `json:"tool,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Query      string          `json:"query,omitempty"`
	// TimeoutMS is how long the caller waits for the result; the
	// orchestrator gives the call no longer. Zero: the tool's own timeout.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// DecodeDelegateRequest parses the payload of a ReportDelegate report.
func DecodeDelegateRequest(r Report) (DelegateRequest, error) {
	const what = "delegate request"
	var d DelegateRequest
	if err := decodePayload(what, r, ReportDelegate, &d); err != nil {
		return DelegateRequest{}, err
	}
	if err := checkRequestID(what, d.RequestID, true); err != nil {
		return DelegateRequest{}, err
	}
	switch {
	case d.Token == "":
		return DelegateRequest{}, &DecodeError{What: what, Field: "token", Msg: "required"}
	case len(d.Token) > MaxDelegationToken:
		return DelegateRequest{}, &DecodeError{What: what, Field: "token", Msg: fmt.Sprintf("%d bytes, at most %d allowed", len(d.Token), MaxDelegationToken)}
	case d.TimeoutMS < 0:
		return DelegateRequest{}, &DecodeError{What: what, Field: "timeout_ms", Msg: "must not be negative"}
	case (d.Tool == "") == (d.Query == ""):
		return DelegateRequest{}, &DecodeError{What: what, Field: "tool", Msg: "give either tool (with parameters) or query"}
	case len(d.Query) > MaxDelegateQuery:
		return DelegateRequest{}, &DecodeError{What: what, Field: "query", Msg: fmt.Sprintf("%d bytes, at most %d allowed", len(d.Query), MaxDelegateQuery)}
	case d.Query != "" && len(d.Parameters) > 0 && string(d.Parameters) != "null":
		return DelegateRequest{}, &DecodeError{What: what, Field: "parameters", Msg: "not with query"}
	}
	if err := ValidateAgentID(d.AgentID); err != nil {
		return DelegateRequest{}, &DecodeError{What: what, Field: "agent_id", Msg: err.Error()}
	}
	if d.Tool != "" {
		p, err := objectOrEmpty(what, "parameters", d.Parameters)
		if err != nil {
			return DelegateRequest{}, err
		}
		d.Parameters = p
	} else {
		d.Parameters = nil
	}
	return d, nil
}

// checkDelegation checks the bounds of a Delegation on a prompt payload.
func checkDelegation(d *Delegation) error {
	const what = "prompt payload"
	if d == nil {
		return nil
	}
	switch {
	case d.Token == "" || len(d.Token) > MaxDelegationToken:
		return &DecodeError{What: what, Field: "delegation.token", Msg: fmt.Sprintf("want 1 to %d bytes", MaxDelegationToken)}
	case len(d.Chain) == 0 || len(d.Chain) > MaxDelegationChain:
		return &DecodeError{What: what, Field: "delegation.chain", Msg: fmt.Sprintf("want 1 to %d agents", MaxDelegationChain)}
	case len(d.Tools) > MaxRemoteTools:
		return &DecodeError{What: what, Field: "delegation.tools", Msg: fmt.Sprintf("%d tools, at most %d", len(d.Tools), MaxRemoteTools)}
	}
	for i, id := range d.Chain {
		if err := ValidateAgentID(id); err != nil {
			return &DecodeError{What: what, Field: fmt.Sprintf("delegation.chain[%d]", i), Msg: err.Error()}
		}
	}
	for i, t := range d.Tools {
		field := fmt.Sprintf("delegation.tools[%d]", i)
		if err := ValidateAgentID(t.AgentID); err != nil {
			return &DecodeError{What: what, Field: field + ".agent_id", Msg: err.Error()}
		}
		if (t.Tool == "") == !t.Prompt {
			return &DecodeError{What: what, Field: field + ".tool", Msg: "give either tool or prompt: true"}
		}
		if t.TimeoutMS < 0 {
			return &DecodeError{What: what, Field: field + ".timeout_ms", Msg: "must not be negative"}
		}
	}
	return nil
}

// DecodeDelegateResult parses the payload of a CmdDelegateResult command:
// a tool result that must name the DelegateRequest it answers.
func DecodeDelegateResult(payload []byte) (ToolResult, error) {
	res, err := DecodeToolResult(Report{ReportType: ReportResult, Payload: payload})
	if err != nil {
		return ToolResult{}, err
	}
	if err := checkRequestID("delegate result", res.RequestID, true); err != nil {
		return ToolResult{}, err
	}
	return res, nil
}
