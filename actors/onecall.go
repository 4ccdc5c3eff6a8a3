package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// OneCall is a tool call made outside any chat: one an edge agent's own
// loop delegates to another agent through the orchestrator. It runs the way
// a chat's call does (schema check, approval rules, timeout rules, a
// tool-call actor with its request_id, deadline, restarts and audit row),
// with the conversation's options.
type OneCall struct {
	// ConversationID is audited as the row's conversation_id; it says who
	// asked.
	ConversationID string
	// Call is audited as the row's call_id (Call.ID), tool (Call.Name) and
	// params (Call.Arguments).
	Call   llm.ToolCall
	Target Target
	// MaxTimeout, when positive, bounds the call's timeout (the caller
	// waits no longer).
	MaxTimeout time.Duration
}

// OneResult is what RunOne returns: the result and the request_id the
// command went under ("" when refused before anything was sent).
type OneResult struct {
	Output    skills.Output
	RequestID string
}

// RunOne runs c and returns its result once its audit row is written. It
// blocks for at most the call's deadline plus the audit timeout; when ctx
// ends first, the call is abandoned (its agent told to forget it) and
// audited as interrupted.
func (cs *Conversations) RunOne(ctx context.Context, root *actor.RootContext, c OneCall) OneResult {
	o := cs.o
	t := c.Target
	refuse := func(res *skills.Output) OneResult {
		cs.AuditRefusal(c, *res)
		return OneResult{Output: *res}
	}
	var args map[string]any
	if err := json.Unmarshal(t.Args, &args); err != nil || args == nil {
		return refuse(toolError(wire.ErrInvalidParams, fmt.Sprintf("Invalid parameters for %q: arguments are not a JSON object: %s. %s",
			c.Call.Name, truncate(string(t.Args), 200), paramLists(t.Schema))))
	}
	if msg := o.schemas.validateArgs(c.Call.Name, t.Schema, args); msg != "" {
		return refuse(toolError(wire.ErrInvalidParams, msg))
	}
	if o.Approvals != nil {
		if why := o.Approvals.Gate(t, c.Call.Name); why != "" {
			return refuse(toolError(wire.ErrPermissionDenied, fmt.Sprintf(
				"tool %q needs a person's approval (%s); a delegated call is never held for approval, so it was not run", c.Call.Name, why)))
		}
	}
	timeout := toolTimeout(o.TimeoutRules, t.Category, callOwnTimeoutMS(t, args))
	if c.MaxTimeout > 0 && c.MaxTimeout < timeout {
		timeout = c.MaxTimeout
	}
	prefix := "tool"
	if t.Prompt != nil {
		prefix = "prompt"
	}
	s := &callSpec{convID: c.ConversationID, call: c.Call, target: t, agentID: t.AgentID, tool: t.Tool,
		requestID: fmt.Sprintf("%s-%d-%d", prefix, o.Now().UnixNano(), requestSeq.Add(1)), runID: t.runID(o), timeout: timeout, o: o}
	if o.Edges != nil {
		s.edges = o.Edges.PID
	}
	s.started = o.Now()
	s.deadline = s.started.Add(s.timeout + o.ReplySlack)
	done := make(chan *callDone, 1)
	props := actor.PropsFromProducer(func() actor.Actor { return &oneCall{s: s, done: done} }, onHot,
		actor.WithSupervisor(actor.NewOneForOneStrategy(o.CallRetries, o.CallRetryWindow,
			func(any) actor.Directive { return actor.RestartDirective })))
	pid, err := root.SpawnNamed(props, safeName("", fmt.Sprintf("onecall-%d", callSeq.Add(1))))
	if err != nil {
		return refuse(toolError(wire.ErrInternal, fmt.Sprintf("start tool call: %v", err)))
	}
	defer root.Stop(pid)
	var m *callDone
	select {
	case m = <-done:
	case <-ctx.Done():
		res := skills.Failed(wire.ErrInterrupted, "the orchestrator stopped while the call ran; it may or may not have run")
		if s.finished.CompareAndSwap(false, true) {
			_, _ = completeCall(o, s.convID, s.call, s.agentID, s.requestID, s.runID, res, o.Now().Sub(s.started), false)
		}
		return OneResult{Output: res, RequestID: s.requestID}
	case <-time.After(s.deadline.Sub(o.Now()) + o.AuditTimeout + o.ReplySlack):
		// The call's own timer ends it first; this only guards a lost message.
		return OneResult{Output: *toolError(wire.ErrInternal, "the call ended without a result"), RequestID: s.requestID}
	}
	if m.pending != nil {
		select {
		case <-m.pending:
		case <-time.After(o.AuditTimeout):
		}
	}
	return OneResult{Output: m.res, RequestID: s.requestID}
}

// oneCall is the parent of one tool-call actor outside a chat: it
// supervises it (restarts) and passes its one callDone on.
type oneCall struct {
	s    *callSpec
	done chan<- *callDone
	sent bool
}

func (p *oneCall) Receive(ctx actor.Context) {
	s := p.s
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if _, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &toolCall{s: s} }, onHot),
			safeName(ctx.Self().Id, "call")); err != nil {
			p.pass(&callDone{res: skills.Failed(wire.ErrInternal, fmt.Sprintf("start tool call: %v", err))})
		}
	case *callDone:
		p.pass(m)
	case *actor.Terminated:
		if s.finished.Load() {
			return // its callDone is on the way
		}
		res := s.gaveUp()
		o := s.o
		done := p.done
		p.sent = true
		go func() {
			_, _ = completeCall(o, s.convID, s.call, s.agentID, s.requestID, s.runID, res, o.Now().Sub(s.started), false)
			done <- &callDone{res: res}
		}()
	case *actor.Stopping:
		// Abandoned (the node closes) or done: either way the edge actor
		// has nothing left to wait for (a no-op when it answered).
		if s.edges != nil && s.agentID != "" && s.target.Local == nil {
			ctx.Send(s.edges, &CancelDispatch{AgentID: s.agentID, RequestID: s.requestID})
		}
	}
}

func (p *oneCall) pass(m *callDone) {
	if p.sent {
		return
	}
	p.sent = true
	p.done <- m
}

// AuditRefusal records c as refused with res before anything was sent.
func (cs *Conversations) AuditRefusal(c OneCall, res skills.Output) {
	_, _ = completeCall(cs.o, c.ConversationID, c.Call, c.Target.AgentID, "", "", res, 0, false)
}

// CallTimeout is the timeout a call of a tool of category with its own
// timeout ownMS (0: none) gets under the conversations' rules.
func (cs *Conversations) CallTimeout(category string, ownMS int64) time.Duration {
	return toolTimeout(cs.o.TimeoutRules, category, ownMS)
}

// ReplySlack is what a call's deadline adds to its timeout for the round trip.
func (cs *Conversations) ReplySlack() time.Duration { return cs.o.ReplySlack }

// gaveUp is the result of a call whose actor the supervisor gave up on:
// agent_offline when its last failure was a publish that did not go out,
// else internal.
func (s *callSpec) gaveUp() skills.Output {
	reason, _ := s.lastFailure.Load().(string)
	code := wire.ErrInternal
	if strings.HasPrefix(reason, "transient: ") {
		code = wire.ErrAgentOffline
	}
	return skills.Failed(code, fmt.Sprintf("tool call failed after %d attempts: %s", s.attempts.Load(), reason))
}
