package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// MaxPendingDelegations bounds the delegated calls an agent's prompt loops
// wait for at once; more are refused as busy without being sent.
const MaxPendingDelegations = 64

// delegateMargin is what an agent keeps of a delegated call's timeout for
// the answer's way back: the orchestrator is told to finish that early.
const delegateMargin = 500 * time.Millisecond

// delegations are the delegated calls waiting for their answer, by
// request_id.
type delegations struct {
	mu      sync.Mutex
	pending map[string]chan wire.ToolResult
}

var delegateSeq atomic.Uint64

// remoteTools is the toolbox of the other agents' tools one prompt may use
// (wire.Delegation): each call goes to the orchestrator, which checks it
// and runs it on its agent.
type remoteTools struct {
	a      *Agent
	token  string
	byName map[string]wire.RemoteTool
	defs   []llm.ToolDef
}

var _ actors.Toolbox = (*remoteTools)(nil)

// promptParams is the schema of a call of another agent's own loop.
var promptParams = map[string]any{"type": "object", "properties": map[string]any{
	"query": map[string]any{"type": "string", "description": "what to ask, in natural language"}}, "required": []any{"query"}}

// remoteName is the name the model sees: {agent}__{tool}, or
// {agent}__prompt for the agent's own loop.
func remoteName(t wire.RemoteTool) string {
	if t.Prompt {
		return t.AgentID + actors.ToolSep + wire.CmdPrompt
	}
	return t.AgentID + actors.ToolSep + t.Tool
}

// newRemoteTools builds the toolbox of d; a name given twice keeps its first.
func (a *Agent) newRemoteTools(d *wire.Delegation) *remoteTools {
	r := &remoteTools{a: a, token: d.Token, byName: map[string]wire.RemoteTool{}}
	for _, t := range d.Tools {
		name := remoteName(t)
		if _, dup := r.byName[name]; dup {
			continue
		}
		r.byName[name] = t
		params := t.Parameters
		if t.Prompt {
			params = promptParams
		} else if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		r.defs = append(r.defs, llm.ToolDef{Name: name, Description: t.Description, Parameters: params})
	}
	sort.Slice(r.defs, func(i, j int) bool { return r.defs[i].Name < r.defs[j].Name })
	return r
}

// Defs implements actors.Toolbox.
func (r *remoteTools) Defs() []llm.ToolDef { return r.defs }

// Resolve implements actors.Toolbox.
func (r *remoteTools) Resolve(call llm.ToolCall) (actors.Target, *skills.Output) {
	t, ok := r.byName[call.Name]
	if !ok {
		out := skills.Failed(wire.ErrNotFound, fmt.Sprintf("tool %q not found", call.Name))
		return actors.Target{}, &out
	}
	var schema map[string]any
	if t.Prompt {
		schema = promptParams
	} else {
		schema = t.Parameters
	}
	// The edge_call category: its maximum (10 min) leaves the orchestrator's
	// figure for the wait as it is.
	return actors.Target{Tool: call.Name, Category: actors.CategoryEdgeCall, OwnTimeoutMS: t.TimeoutMS, Schema: schema, Args: call.Arguments,
		Local: func(ctx context.Context, args json.RawMessage) skills.Output {
			return r.a.delegate(ctx, r.token, t, args)
		}}, nil
}

// delegate asks the orchestrator to run one call of t and waits for its
// answer until ctx ends.
func (a *Agent) delegate(ctx context.Context, token string, t wire.RemoteTool, args json.RawMessage) skills.Output {
	req := wire.DelegateRequest{RequestID: fmt.Sprintf("dlg-%d-%d", time.Now().UnixNano(), delegateSeq.Add(1)),
		Token: token, AgentID: t.AgentID, Tool: t.Tool, Parameters: args}
	if t.Prompt {
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(args, &q); err != nil || q.Query == "" {
			return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("Invalid parameters for %q: give query, a non-empty string", remoteName(t)))
		}
		req.Tool, req.Parameters, req.Query = "", nil, q.Query
	}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMS = max(time.Until(dl)-delegateMargin, time.Millisecond).Milliseconds()
	}
	ch, ok := a.delegs.add(req.RequestID)
	if !ok {
		return skills.Failed(wire.ErrBusy, fmt.Sprintf("edge agent %q waits for %d delegated calls already; retry later", a.cfg.AgentID, MaxPendingDelegations))
	}
	defer a.delegs.remove(req.RequestID)
	b, err := a.encodeReport(wire.ReportDelegate, req)
	if err != nil {
		return skills.Failed(wire.ErrInternal, fmt.Sprintf("encode delegate request: %v", err))
	}
	// Not kept in the outbox: a call asked for long after its loop gave up
	// on it would run for nobody.
	if err := a.publishNow(ctx, b); err != nil {
		return skills.Failed(wire.ErrAgentOffline, fmt.Sprintf("could not reach the orchestrator to call %q: %v", remoteName(t), err))
	}
	select {
	case res := <-ch:
		return skills.FromWire(res)
	case <-ctx.Done():
		return skills.Failed(wire.ErrTimeout, fmt.Sprintf("no answer from the orchestrator for %q (request %s) in time", remoteName(t), req.RequestID))
	}
}

// add registers a wait for request id; false when MaxPendingDelegations
// wait already.
func (d *delegations) add(id string) (chan wire.ToolResult, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[string]chan wire.ToolResult{}
	}
	if len(d.pending) >= MaxPendingDelegations {
		return nil, false
	}
	ch := make(chan wire.ToolResult, 1)
	d.pending[id] = ch
	return ch, true
}

func (d *delegations) remove(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending, id)
}

// deliver hands res to its waiting call; false when none waits (answered
// already, given up, or never asked).
func (d *delegations) deliver(res wire.ToolResult) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch, ok := d.pending[res.RequestID]
	if !ok {
		return false
	}
	delete(d.pending, res.RequestID)
	ch <- res // buffered, and removed from the map: never blocks
	return true
}

// onDelegateResult takes a delegate_result command on the MQTT client's
// goroutine, never through the command queue: the loop waiting for it may
// hold a worker.
func (a *Agent) onDelegateResult(cmd wire.Command) {
	res, err := wire.DecodeDelegateResult(cmd.Payload)
	if err != nil {
		a.cmdLog.Warn("dropping malformed delegate result", "request_id", cmd.RequestID, "err", err)
		return
	}
	if !a.delegs.deliver(res) {
		a.cmdLog.Debug("dropping delegate result nothing waits for", "request_id", res.RequestID)
	}
}

// audited is p as the agent keeps it in its request log and audit row:
// the delegation's chain and the names of the tools offered, without the
// token or the tools' descriptions and schemas.
func audited(p wire.PromptPayload) wire.PromptPayload {
	if p.Delegation == nil {
		return p
	}
	d := wire.Delegation{Chain: p.Delegation.Chain, Tools: make([]wire.RemoteTool, len(p.Delegation.Tools))}
	for i, t := range p.Delegation.Tools {
		d.Tools[i] = wire.RemoteTool{AgentID: t.AgentID, Tool: t.Tool, Prompt: t.Prompt}
	}
	p.Delegation = &d
	return p
}
