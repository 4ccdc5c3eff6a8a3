package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
)

// EventCallMoved is the event kind of a group call sent to another member
// because the first could not run it (offline before it started, saturated,
// or it never told the agent to start). Its agent_id is the member the call
// left; detail names the group, the request_id, both members and why.
const EventCallMoved = "call_moved"

// moves is a group call's state beside its callSpec: the member it is on
// now (read by the conversation too, hence atomic) and the members tried.
type moves struct {
	cur    atomic.Pointer[moved]
	tried  map[string]bool // touched only by the call's actor
	nmoves int
}

// moved is where a call went after its first member.
type moved struct {
	agentID string
	gated   bool
}

// agent is the agent the call is on now: where it ran, for its audit row.
func (s *callSpec) agent() string {
	if m := s.cur.Load(); m != nil {
		return m.agentID
	}
	return s.agentID
}

// gated says the call's command asks its agent for the start gate.
func (s *callSpec) gated() bool {
	if m := s.cur.Load(); m != nil {
		return m.gated
	}
	return s.target.Gated
}

// move sends a group call that is known not to run on its member to the
// least busy other member that has not had it. It reports false (the call
// ends with its failure) for a call that is not a group call, past its
// deadline, or with no member left.
func (c *toolCall) move(ctx actor.Context, why string) bool {
	s := c.s
	g := s.target.Group
	if g == nil || !s.o.Now().Before(s.deadline) {
		return false
	}
	from := s.agent()
	if s.tried == nil {
		s.tried = map[string]bool{}
	}
	s.tried[from] = true
	_, m, ok := g.next(s.tried, false)
	if !ok {
		return false
	}
	s.nmoves++
	s.cur.Store(&moved{agentID: m.id, gated: m.gated})
	s.o.Logger.Info("moving a group call to another member", "group", g.Name(), "request_id", s.requestID,
		"from", from, "to", m.id, "why", why)
	recordMove(s.o, persistence.Event{Time: s.o.Now().UTC(), Node: s.o.Node, AgentID: from, Kind: EventCallMoved},
		map[string]any{"request_id": s.requestID, "group": g.Name(), "tool": s.tool, "from": from, "to": m.id,
			"first": s.agentID, "move": s.nmoves, "why": why})
	c.dispatch(ctx)
	return true
}

// didNotRun reports whether an agent's answer says the call did not run
// there and never will: it was not told to start. (An agent's busy is not
// enough: it may answer a redelivered copy of a command that runs.)
func didNotRun(res skills.Output) bool {
	return res.ErrorType() == wire.ErrNotStarted
}

// recordMove audits a move off the mailbox when the audit log takes
// events. At most one per member of the group per call.
func recordMove(o *ConvOptions, ev persistence.Event, detail map[string]any) {
	events, ok := o.Audit.(persistence.EventLog)
	if !ok {
		return
	}
	b, err := json.Marshal(detail)
	if err != nil {
		o.Logger.Error("encode call_moved event", "err", err)
		return
	}
	ev.Detail = b
	log, timeout := o.Logger, o.AuditTimeout
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := events.RecordEvent(ctx, ev); err != nil {
			log.Error("audit event", "kind", ev.Kind, "err", fmt.Sprint(err))
		}
	}()
}
