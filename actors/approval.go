package actors

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// ErrApprovalDenied is the error type of a tool call that needed a
// person's approval and did not get it: denied, timed out (a timeout is a
// denial), canceled, or not queued.
const ErrApprovalDenied wire.ErrorType = "approval_denied"

// ApprovalRequest is a tool call waiting for a person.
type ApprovalRequest struct {
	ConversationID string
	// RequestID is the call's wire request id (joins tool_calls).
	RequestID string
	CallID    string
	// AgentID is the edge agent that would run it ("" for the node's own
	// tools); Tool is its name there; Name is the model-visible name.
	AgentID, Tool, Name string
	// Args are the arguments that would be sent; for an edge_call query,
	// the edge_call arguments (the query text).
	Args json.RawMessage
	// Prompt marks an edge_call query: the agent's own model would choose
	// its tools.
	Prompt bool
	// Reason says which rule asks for approval.
	Reason string
}

// ApprovalDecision is how a gated call was decided.
type ApprovalDecision struct {
	// Approved is true only when a person approved it.
	Approved bool
	// ID is the approval's id; empty when it could not be queued.
	ID string
	// State is "approved", "denied", "timed_out" or "canceled".
	State string
	// By names who decided ("timeout", "restart" for the node itself).
	By   string
	Note string
	// Err is why the request could not be queued or decided (queue full,
	// audit store failing); the call is not run.
	Err error
}

// Approver is the approval gate every tool call of a conversation passes,
// wherever it runs: the node's own tools, edge agent tools, edge_call in
// both modes. Implementations are safe for concurrent use.
type Approver interface {
	// Gate returns why the call to t (name as the model sees it) needs a
	// person's approval, or "" when it does not.
	Gate(t Target, name string) string
	// Await queues req durably, calls pending with its id once it is
	// stored, and blocks until it is decided or ctx ends (canceled). It
	// never approves on a timeout or an error.
	Await(ctx context.Context, req ApprovalRequest, pending func(id string)) ApprovalDecision
}

// awaitApproval holds call i of the current turn until the approver
// decides it, off the mailbox; the decision comes back as approvalDone.
func (c *conversation) awaitApproval(ctx actor.Context, i int, call llm.ToolCall, s *callSpec, why string) {
	t := c.cur
	actx, cancel := context.WithCancel(context.Background())
	if t.approvals == nil {
		t.approvals = map[int]context.CancelFunc{}
	}
	t.approvals[i] = cancel
	req := ApprovalRequest{ConversationID: c.id, RequestID: s.requestID, CallID: call.ID, AgentID: s.agentID, Tool: s.tool,
		Name: call.Name, Args: s.target.Args, Prompt: s.target.Prompt != nil, Reason: why}
	self, root, gen, ap, progress, convID, now, iter := ctx.Self(), ctx.ActorSystem().Root, t.gen, c.o.Approvals, t.progress, c.id, c.o.Now, t.m.Iterations()
	go func() {
		defer cancel()
		d := ap.Await(actx, req, func(id string) {
			progress.emit(Progress{Kind: ProgressApprovalWait, ConversationID: convID, Time: now(), Iteration: iter, CallID: call.ID,
				RequestID: req.RequestID, Agent: req.AgentID, Tool: req.Tool, ApprovalID: id, Error: why})
		})
		root.Send(self, &approvalDone{gen: gen, index: i, decision: d, call: call, agentID: s.agentID, requestID: s.requestID})
	}()
}

// onApproval runs an approved call, and answers any other with an
// approval_denied error the model can act on.
func (c *conversation) onApproval(ctx actor.Context, m *approvalDone) {
	t := c.cur
	if t == nil || m.gen != t.gen || !t.m.Awaiting(m.index) {
		// The chat ended (canceled, stopped) while the call waited: it
		// was not run, and nothing else records it.
		c.auditUnrun(m)
		return
	}
	delete(t.approvals, m.index)
	i := m.index
	call := t.assistant.ToolCalls[i]
	call.Name = t.names.original(call.Name)
	p := t.calls[i]
	if m.decision.Approved {
		c.spawn(ctx, i, call, p.spec)
		return
	}
	// Audited under the request id the approval names, which joins them.
	c.immediateAs(ctx, i, call, p.agentID, p.spec.requestID, skills.Failed(ErrApprovalDenied, denialText(call.Name, m.decision)))
}

// auditUnrun writes the tool_calls row of a call whose chat ended while it
// waited for approval, under the request id its approval names: not
// approved (a canceled wait included), or approved too late to start.
func (c *conversation) auditUnrun(m *approvalDone) {
	res := skills.Failed(ErrApprovalDenied, denialText(m.call.Name, m.decision))
	if m.decision.Approved {
		res = skills.Failed(wire.ErrInterrupted, fmt.Sprintf(
			"approved by %s (approval %s), but the chat ended before %q started; it was not run", m.decision.By, m.decision.ID, m.call.Name))
	}
	o, convID := c.o, c.id
	go func() { _, _ = completeCall(o, convID, m.call, m.agentID, m.requestID, "", res, 0, false) }() // logged there
}

// denialText is what the model reads about a call that was not approved.
func denialText(name string, d ApprovalDecision) string {
	var msg string
	switch {
	case d.Err != nil:
		msg = fmt.Sprintf("approval for %q could not be requested (%v); the call was not run", name, d.Err)
	case d.State == "timed_out":
		msg = fmt.Sprintf("approval timed out: nobody approved %q in time (approval %s), so it was not run; a timeout is a denial", name, d.ID)
	case d.State == "canceled":
		msg = fmt.Sprintf("approval canceled: the chat ended before anyone decided on %q (approval %s); it was not run", name, d.ID)
	default:
		msg = fmt.Sprintf("denied by %s: %q was not run (approval %s)", d.By, name, d.ID)
	}
	if d.Note != "" {
		msg += ". Note: " + truncate(d.Note, 200)
	}
	return msg + ". Do not retry it in this chat; tell the user it needs approval."
}

// cancelApprovals ends the waits of the current turn (chat canceled or
// ended): each is decided as canceled.
func (t *turn) cancelApprovals() {
	for i, cancel := range t.approvals {
		cancel()
		delete(t.approvals, i)
	}
}
