package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// callSpec is what a tool call is: it outlives restarts of the actor that
// runs it, so a restarted instance resumes the same call with the same
// request_id and the same deadline.
type callSpec struct {
	index     int
	gen       int
	convID    string
	call      llm.ToolCall
	target    Target
	agentID   string
	tool      string
	requestID string
	// runID, set for a local tool with a Journal, is the request of the
	// journal the run is recorded under; fixed when the spec is made.
	runID   string
	timeout time.Duration
	// started is when the call was first dispatched: its audit row's
	// elapsed_ms is the round trip observed from then.
	started  time.Time
	deadline time.Time
	edges    *actor.PID
	o        *ConvOptions
	// progress receives the call's streamed output (nil: nobody watches);
	// iteration is its turn's, as on the call's tool_start.
	progress  ProgressFunc
	iteration int
	// caller is the chat the call runs for, given to local tools.
	caller Caller
	// outputSeq is the last streamed Seq passed on, so a redelivered
	// chunk is not shown twice.
	outputSeq int64

	attempts atomic.Int32
	// moves is the group call's state once it moved (groupcall.go).
	moves
	// finished is set once the call has its result: the one "done" of a
	// call, read by every incarnation of its actor and by the
	// conversation when the supervisor gives up on the actor.
	finished    atomic.Bool
	lastFailure atomic.Value // string
}

// transientFault is the panic value that asks the supervisor for a restart.
type transientFault struct{ msg string }

func (t transientFault) String() string { return "transient: " + t.msg }

// toolCall runs one callSpec: it dispatches the command to the edge actor,
// enforces the deadline and reports exactly one callDone to its parent.
type toolCall struct {
	s *callSpec
	// remote: the result is an edge agent's answer, whose elapsed time is
	// the agent's own figure.
	remote bool
	cancel []scheduler.CancelFunc
	stop   context.CancelFunc // ends a local run
	local  *localHandoff      // the local run of this instance, if any
}

// localHandoff passes a local run's result from the run's goroutine to
// the call's actor. An actor stopped before it had the result (its chat
// was canceled) has nobody to audit the run: then the goroutine audits it
// itself, so the run's audit row ends its request-log entry as for any
// run, rather than the node's next start taking it for one a crash cut.
type localHandoff struct {
	mu        sync.Mutex     // guards res and abandoned
	res       *skills.Output // set once the run ended, nil before
	abandoned bool           // the actor stopped first
}

func (c *toolCall) Receive(ctx actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			c.s.lastFailure.Store(fmt.Sprint(r))
			panic(r) // let the supervisor decide
		}
	}()
	s := c.s
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if s.finished.Load() {
			return // a restart after the result: nothing left to do
		}
		n := int(s.attempts.Add(1))
		if s.o.fault != nil {
			s.o.fault(s.call, n)
		}
		remaining := s.deadline.Sub(s.o.Now())
		if remaining <= 0 {
			c.finish(ctx, timeoutResult(s))
			return
		}
		sched := scheduler.NewTimerScheduler(ctx)
		c.cancel = append(c.cancel, sched.SendOnce(remaining, ctx.Self(), &callTimeout{}))
		if n == 1 {
			c.dispatch(ctx)
		} else {
			c.cancel = append(c.cancel, sched.SendOnce(backoff(n), ctx.Self(), &callRedeliver{}))
		}
	case *actor.Stopping, *actor.Restarting:
		for _, f := range c.cancel {
			f()
		}
		c.cancel = nil
		if _, stopping := m.(*actor.Stopping); stopping && c.local != nil {
			// A restarted instance resumes the call; a stopped one never
			// will, so the run is audited now or when it ends.
			c.local.mu.Lock()
			res := c.local.res
			c.local.abandoned = res == nil
			c.local.mu.Unlock()
			if res != nil && !s.finished.Load() {
				hot.Go(func() { s.auditAbandoned(*res) })
			}
		}
		if c.stop != nil {
			c.stop()
			c.stop = nil
		}
	case *localDone:
		if !s.finished.Load() {
			c.finish(ctx, m.res)
		}
	case *callRedeliver:
		c.dispatch(ctx)
	case *ToolOutput:
		if s.finished.Load() || m.RequestID != s.requestID || m.Seq <= s.outputSeq {
			return
		}
		s.outputSeq = m.Seq
		s.progress.emit(Progress{Kind: ProgressToolOutput, ConversationID: s.convID, Time: s.o.Now(), Iteration: s.iteration, CallID: s.call.ID,
			RequestID: s.requestID, Agent: s.agent(), Tool: s.tool, Seq: m.Seq, Output: m.Output})
	case *Reply:
		if s.finished.Load() || m.RequestID != s.requestID {
			return
		}
		res := decodeReply(s, m.Report)
		if didNotRun(res) && c.move(ctx, res.ErrorText()) {
			return
		}
		c.remote = true
		c.finish(ctx, res)
	case *DispatchFailed:
		if s.finished.Load() || m.RequestID != s.requestID {
			return
		}
		if m.Movable && c.move(ctx, m.Err) {
			return
		}
		if m.Transient && s.o.Now().Before(s.deadline) {
			panic(transientFault{msg: m.Err})
		}
		c.finish(ctx, skills.Failed(m.Type, m.Err))
	case *callTimeout:
		if s.finished.Load() {
			return
		}
		if s.target.Local == nil {
			ctx.Send(s.edges, &CancelDispatch{AgentID: s.agent(), RequestID: s.requestID})
		}
		c.finish(ctx, timeoutResult(s))
	}
}

// decodeReply reads an agent's report as the result of the call: a tool
// result, or for a prompt the agent's answer with the tools it ran.
func decodeReply(s *callSpec, r wire.Report) skills.Output {
	if s.target.Prompt == nil {
		res, err := wire.DecodeToolResult(r)
		if err != nil {
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("edge agent %q sent an unreadable result: %v", s.agent(), err))
		}
		return skills.FromWire(res)
	}
	p, err := wire.DecodePromptResult(r)
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("edge agent %q sent an unreadable prompt result: %v", s.agentID, err))
	}
	res := wire.ToolResult{Status: p.Status, Tool: s.tool, ElapsedMS: p.Metadata.ElapsedMS, Error: p.Error, ErrorType: p.ErrorType,
		Dropped: p.Dropped}
	if p.Status == wire.StatusError {
		if res.Error == "" {
			res.Error = "the agent answered the prompt with an error and no message"
		}
		return skills.FromWire(res)
	}
	res.Result = p.Content
	if len(p.ToolsExecuted) > 0 {
		var ran []string
		for _, t := range p.ToolsExecuted {
			mark := "ok"
			if !t.Success {
				mark = "failed"
			}
			ran = append(ran, t.Tool+" "+mark)
		}
		res.Result += "\n[agent " + s.agentID + " ran: " + strings.Join(ran, ", ") + "]"
	}
	return skills.FromWire(res)
}

func timeoutResult(s *callSpec) skills.Output {
	return skills.Failed(wire.ErrTimeout, fmt.Sprintf("tool %q on agent %q timed out after %s", s.tool, s.agent(), s.timeout))
}

// backoff is the delay before attempt n (n >= 2) re-sends the command.
func backoff(n int) time.Duration {
	d := 50 * time.Millisecond << (n - 2)
	if d > 2*time.Second || d <= 0 {
		d = 2 * time.Second
	}
	return d
}

func (c *toolCall) dispatch(ctx actor.Context) {
	s := c.s
	if s.target.Local != nil {
		c.runLocal(ctx)
		return
	}
	var cmd wire.Command
	var err error
	if s.target.Prompt != nil {
		cmd, err = wire.NewCommand(wire.CmdPrompt, s.requestID, s.target.Prompt)
	} else {
		cmd, err = wire.NewCommand(wire.CmdTool, s.requestID, wire.ToolPayload{Tool: s.tool, Parameters: s.target.Args,
			TimeoutMS: s.timeout.Milliseconds(), RequestID: s.requestID, ConversationID: s.convID,
			StreamOutput: s.progress != nil, // stream only to someone watching
			StartGate:    s.gated()})
	}
	if err != nil {
		c.finish(ctx, skills.Failed(wire.ErrInvalidParams, err.Error()))
		return
	}
	// The agent refuses the command once the call's deadline has passed
	// (plus a margin for clocks): a command stuck in a broker for hours
	// never runs a stale tool. A resend keeps the first deadline.
	cmd.SetExpiry(s.o.Now(), s.deadline.Sub(s.o.Now()), 0)
	ctx.Send(s.edges, &Dispatch{AgentID: s.agent(), Command: cmd, ReplyTo: ctx.Self(), Deadline: s.deadline, Gated: s.gated()})
}

// runLocal runs a local tool in a goroutine owned by this actor: stopping
// the actor cancels it, and its result comes back as a message.
func (c *toolCall) runLocal(ctx actor.Context) {
	s := c.s
	lctx, cancel := context.WithTimeout(WithCaller(skills.WithCall(context.Background(), skills.Call{ConversationID: s.convID}), s.caller), s.timeout)
	c.stop = cancel
	h := &localHandoff{}
	c.local = h
	self, root, run, args := ctx.Self(), ctx.ActorSystem().Root, s.target.Local, s.target.Args
	hot.Go(func() {
		defer cancel()
		var res skills.Output
		ran := false
		func() {
			defer func() {
				if r := recover(); r != nil {
					res = skills.Failed(wire.ErrInternal, fmt.Sprintf("tool %q panicked: %v", s.tool, r))
				}
			}()
			if s.runID != "" {
				var begun bool
				if res, begun = s.beginRun(lctx); !begun {
					return
				}
				lctx = proc.WithOnStart(lctx, NoteProcess(lctx, s.target.Journal, s.runID, s.o.Logger))
			}
			ran = true
			res = run(lctx, args)
		}()
		if errors.Is(lctx.Err(), context.DeadlineExceeded) {
			// A failure at the deadline that names no cause is the timeout.
			for i, b := range res.Content {
				if b.Kind == skills.KindError && b.Code == "" {
					res.Content[i].Code = wire.ErrTimeout
				}
			}
		}
		h.mu.Lock()
		abandoned := h.abandoned
		if !abandoned {
			h.res = &res
		}
		h.mu.Unlock()
		if abandoned {
			if ran {
				s.auditAbandoned(res)
			}
			return
		}
		root.Send(self, &localDone{res: res})
	})
}

// auditAbandoned audits res, the end of a local run whose actor stopped
// before it finished the call, unless the call was finished meanwhile.
func (s *callSpec) auditAbandoned(res skills.Output) {
	if s.finished.CompareAndSwap(false, true) {
		_, _ = completeCall(s.o, s.convID, s.call, s.agent(), s.requestID, s.runID, res, s.o.Now().Sub(s.started), false) // logged there
	}
}

// beginRun records the run of a local tool in its journal before it
// starts, and reports whether to start it: not when the record failed
// (the result says so), nor when the call was finished meanwhile (its
// deadline passed: its audit row ended the run first), nor when an
// attempt before a restart of the call's actor started it.
func (s *callSpec) beginRun(ctx context.Context) (skills.Output, bool) {
	wctx, cancel := context.WithTimeout(ctx, journalTimeout)
	defer cancel()
	st, _, err := s.target.Journal.BeginRun(wctx, s.runID, persistence.Run{Tool: s.tool, Params: s.target.Args, ConversationID: s.convID})
	switch {
	case err != nil:
		return skills.Failed(wire.ErrInternal, fmt.Sprintf("tool %q was not run: recording the run before it starts failed: %v", s.tool, err)), false
	case st == persistence.RequestRunning:
		// An attempt before a restart of the call's actor started it.
		return skills.Failed(wire.ErrInterrupted, fmt.Sprintf("tool %q was not run again: an earlier attempt of this call started it and was cut", s.tool)), false
	case st != persistence.RequestNew:
		return skills.Failed(wire.ErrInterrupted, fmt.Sprintf("tool %q was not run: the call ended before it started", s.tool)), false
	}
	return skills.Output{}, true
}

// finish audits the outcome off the mailbox, then tells the parent and stops.
func (c *toolCall) finish(ctx actor.Context, res skills.Output) {
	if !c.s.finished.CompareAndSwap(false, true) {
		return
	}
	for _, f := range c.cancel {
		f()
	}
	c.cancel = nil
	s, self, parent, root, remote := c.s, ctx.Self(), ctx.Parent(), ctx.ActorSystem().Root, c.remote
	observed := s.o.Now().Sub(s.started)
	if q, ok := s.o.Audit.(ToolCallQueue); ok {
		// The row is queued before the parent hears of the result, so the
		// history write that precedes the next dispatch or the answer
		// commits it at the latest; the conversation checks its result
		// after that write.
		pending := make(chan error, 1)
		rec := AuditRow(CallRef{Node: s.o.Node, Side: s.o.Side, ConversationID: s.convID, RequestID: s.requestID, CallID: s.call.ID,
			AgentID: s.agent(), Tool: s.call.Name, Params: s.call.Arguments, Elapsed: observed, AgentReported: remote}, res, s.o.Now())
		rec.FinishesRun = s.runID
		log, requestID, tool := s.o.Logger, s.requestID, s.call.Name
		err := q.QueueToolCall(rec, func(err error) {
			if err != nil {
				log.Error("audit tool call", "request_id", requestID, "tool", tool, "err", err)
			}
			pending <- err
		})
		if err == nil {
			ctx.Send(parent, &callDone{gen: s.gen, index: s.index, res: res, result: toolMessage(s.call, res), pending: pending})
			ctx.Stop(self)
			return
		}
		// Not queued (queue full, store closed): the write below reports it.
	}
	hot.Go(func() {
		msg, aerr := completeCall(s.o, s.convID, s.call, s.agent(), s.requestID, s.runID, res, observed, remote)
		root.Send(parent, &callDone{gen: s.gen, index: s.index, res: res, result: msg, audit: aerr})
		root.Stop(self)
	})
}

// ToolCallQueue is an AuditLog that can queue a tool-call row and return
// before it commits, with every write submitted to the same store
// afterwards committing no earlier than the row (sqlite.Store is one). A
// conversation whose Audit is one, and is also its HistoryStore's store,
// does not wait for each row: the history write before the next dispatch
// or the answer commits it at the latest, and the conversation checks the
// row's result after that write, so nothing more runs and nobody is
// answered before the row is committed, and a failed row still ends the
// chat with loop.ErrAudit. The model may see the result first: a
// completion acknowledges nothing to anyone.
type ToolCallQueue interface {
	// QueueToolCall queues c; then, which may be nil, gets the commit's
	// result on the store's writer and must be quick. The error is for a
	// row that could not be queued.
	QueueToolCall(c persistence.ToolCall, then func(error)) error
}

// completeCall records the outcome of a tool call in the audit trail and
// turns it into the tool message the model sees; the error is the audit
// write's. runID is the journal request the row ends ("" for none);
// observed is the round trip this side saw (zero for a call that never
// started); remote says res is an edge agent's answer.
func completeCall(o *ConvOptions, convID string, call llm.ToolCall, agentID, requestID, runID string, res skills.Output,
	observed time.Duration, remote bool) (llm.Message, error) {
	rec := AuditRow(CallRef{Node: o.Node, Side: o.Side, ConversationID: convID, RequestID: requestID, CallID: call.ID,
		AgentID: agentID, Tool: call.Name, Params: call.Arguments, Elapsed: observed, AgentReported: remote}, res, o.Now())
	rec.FinishesRun = runID
	var aerr error
	if o.Audit != nil {
		actx, cancel := context.WithTimeout(context.Background(), o.AuditTimeout)
		if aerr = o.Audit.RecordToolCall(actx, rec); aerr != nil {
			o.Logger.Error("audit tool call", "request_id", requestID, "tool", call.Name, "err", aerr)
		}
		cancel()
	}
	return toolMessage(call, res), aerr
}

// statusOf is wire.StatusSuccess or wire.StatusError.
func statusOf(out skills.Output) string {
	if out.Succeeded() {
		return wire.StatusSuccess
	}
	return wire.StatusError
}

// toolContent renders a result for the model: output as is (cut visibly at
// MaxToolResultBytes), errors as an actionable sentence with the error type.
func toolContent(name string, res skills.Output) string {
	if res.Succeeded() {
		text := res.Text()
		if len(text) > MaxToolResultBytes {
			if res.Truncated && res.ResultBytes > int64(len(text)) {
				// Cut twice: the cut's own note counts what reached
				// here, so the agent's total is said after it.
				note := fmt.Sprintf("\n[output truncated by the agent: %d bytes in all]", res.ResultBytes)
				return truncateResult(text, MaxToolResultBytes-len(note)) + note
			}
			return truncateResult(text, MaxToolResultBytes)
		}
		if res.Truncated {
			return text + fmt.Sprintf("\n[output truncated by the agent: %d bytes in all]", res.ResultBytes)
		}
		return text
	}
	return truncateResult(fmt.Sprintf("Error (%s) from tool %q: %s", res.ErrorType(), name, res.ErrorText()), MaxToolResultBytes)
}
