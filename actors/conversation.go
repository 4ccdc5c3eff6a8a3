package actors

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/actors/loop"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// requestSeq numbers request ids; callSeq names tool-call actors.
var requestSeq, callSeq atomic.Uint64

type queued struct {
	chat   *Chat
	sender *actor.PID
	at     time.Time // when it was queued
}

// turn is the state of one Chat being answered: the loop's rules live in
// its Machine; what is here is what the actor needs to carry out the
// Machine's effects.
type turn struct {
	m         *loop.Machine
	chat      *Chat // the message being answered, for Cancel.Chat
	sender    *actor.PID
	origin    string // Chat.RequestID
	system    string // Chat.System or ConvOptions.System
	maxTokens int
	usage     llm.Usage
	finish    string // the last completion's llm.Response.FinishReason
	seq       int    // of the LLM call in flight
	cancel    context.CancelFunc
	progress  ProgressFunc
	unpersist []llm.Message
	// preRecorded: the current model turn's assistant message is in the
	// history already (stored before its calls were dispatched), so the
	// loop's Record of the turn adds only the results.
	preRecorded bool
	// audits are the results of tool-call rows queued, not waited for
	// (ToolCallQueue): checked after the next history write, before the
	// model or the user sees anything more.
	audits []<-chan error
	// names maps the tool names of the last request as the model saw them
	// back to the offered names.
	names *toolNames

	// the tool calls of the current model turn
	gen       int
	assistant llm.Message
	calls     []plannedCall // by call index, set when a call starts
	started   []time.Time
	batchAt   time.Time
	specs     map[string]*callSpec // by child actor id
	// approvals cancel the calls of this turn that wait for approval, by
	// call index.
	approvals map[int]context.CancelFunc
	// toolbox is the chat's toolbox: Chat.Toolbox or ConvOptions.Toolbox.
	toolbox Toolbox
}

// conversation runs the tool loop for one conversation id.
type conversation struct {
	id      string
	o       *ConvOptions
	history []llm.Message
	loading bool
	// received counts chats, for the passivation handshake. It is shared
	// by the actor's incarnations: a restarted actor counts on from the
	// chats its crashed one took, as the manager does.
	received *int
	// broken is set when stored and in-memory history may disagree (a load
	// or store failed): every chat gets it until the actor stops and the
	// next one loads afresh.
	broken error
	queue  []queued
	cur    *turn
	seq    int
	gen    int
	// lastStore is the conversation's latest history write (storeFunc).
	lastStore *storeLink
	// repair holds the results closeCut gave to calls the stored history
	// left without one; the next chat stores them first.
	repair []llm.Message
	// woken is the state the conversation left with when it went dormant,
	// until the actor takes it when it starts.
	woken *dormantConv
	// lastMsg is when the actor last had a message other than idleTick;
	// idleTimer sends idleTick (armIdle).
	lastMsg   time.Time
	idleTimer *time.Timer
}

func (c *conversation) Receive(ctx actor.Context) {
	msg := ctx.Message()
	if _, tick := msg.(idleTick); !tick {
		c.lastMsg = time.Now()
	}
	switch m := msg.(type) {
	case *actor.Started:
		c.armIdle(ctx)
		if w := c.woken; w != nil {
			// Woken from dormancy: the history is the one it left with.
			c.woken, c.history, c.repair = nil, w.history, w.repair
			return
		}
		c.load(ctx)
	case idleTick:
		_, idle := c.o.dormancy()
		if left := idle - time.Since(c.lastMsg); left > 0 {
			c.idleTimer.Reset(left)
			return
		}
		// Checked again later: it stays if busy, or if a chat crossed
		// its request to stop.
		c.idleTimer.Reset(idle)
		c.onIdle(ctx, true)
	case *Evict:
		*c.received++ // the manager counts it (see manager.Receive)
		c.onIdle(ctx, false)
	case *historyLoaded:
		c.onLoaded(ctx, m)
	case *Chat:
		*c.received++
		if c.o.chatFault != nil {
			c.o.chatFault(m)
		}
		if c.broken != nil {
			ctx.Respond(&Answer{ConversationID: c.id, Err: c.broken})
			return
		}
		if c.cur != nil || c.loading {
			if len(c.queue) >= c.o.QueueLen {
				ctx.Respond(&Answer{ConversationID: c.id, Err: ErrBusy})
				return
			}
			if c.cur != nil {
				m.Wait.wait()
			}
			c.queue = append(c.queue, queued{chat: m, sender: ctx.Sender(), at: time.Now()})
			return
		}
		m.Wait.start(0)
		c.begin(ctx, m, ctx.Sender())
	case *Cancel:
		c.onCancel(ctx, m)
	case *StateQuery:
		c.onStateQuery(ctx)
	case *llmDone:
		// Stale unless it answers the latest call of the running turn: end
		// moves c.seq on, so the answer to a call that a Cancel ended (its
		// provider returns "canceled") does not end that turn a second time
		// while its history is being stored.
		if c.cur == nil || m.seq != c.cur.seq || m.seq != c.seq {
			return
		}
		c.onLLM(ctx, m)
	case *persisted:
		c.onPersisted(ctx, m)
	case *callDone:
		c.onCall(ctx, m)
	case *approvalDone:
		c.onApproval(ctx, m)
	case *finished:
		c.onFinished(ctx, m)
	case *actor.Terminated:
		releaseRemovedChild(ctx)
		c.onTerminated(ctx, m.Who)
	case *actor.Restarting:
		c.stopIdle()
	case *actor.Stopping:
		c.stopIdle()
		if c.cur != nil {
			if c.cur.cancel != nil {
				c.cur.cancel()
			}
			c.cur.cancelApprovals()
			if c.cur.sender != nil {
				ctx.Send(c.cur.sender, &Answer{ConversationID: c.id, Err: ErrStopped})
			}
		}
		for _, q := range c.queue {
			ctx.Send(q.sender, &Answer{ConversationID: c.id, Err: ErrStopped})
		}
	}
}

// fail marks the conversation broken: queued and later chats get err, and
// the manager is asked to stop this actor so the next one loads afresh.
func (c *conversation) fail(ctx actor.Context, err error) {
	c.broken = err
	for _, q := range c.queue {
		ctx.Send(q.sender, &Answer{ConversationID: c.id, Err: err})
	}
	c.queue = nil
	ctx.Send(ctx.Parent(), &passivate{id: c.id, pid: ctx.Self(), force: true})
}

// next starts the oldest queued chat, if any.
func (c *conversation) next(ctx actor.Context) {
	if c.cur != nil || c.loading || len(c.queue) == 0 {
		return
	}
	q := c.queue[0]
	// The slot is cleared: the backing array outlives the slice, and would
	// keep the chat and its sender (an asking actor, with its mailbox)
	// alive as long as the conversation.
	c.queue[0] = queued{}
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil
	}
	for _, rest := range c.queue {
		rest.chat.Wait.wait() // behind q's chat from now on
	}
	q.chat.Wait.start(time.Since(q.at))
	c.begin(ctx, q.chat, q.sender)
}

func (c *conversation) begin(ctx actor.Context, m *Chat, sender *actor.PID) {
	if len(m.Seed) > 0 && len(c.history) > 0 {
		ctx.Send(sender, &Answer{ConversationID: c.id, Err: ErrSeeded})
		c.next(ctx)
		return
	}
	system := m.System
	if system == "" {
		system = c.o.System
	}
	c.cur = &turn{chat: m, sender: sender, origin: m.RequestID, system: system, maxTokens: m.MaxTokens, specs: map[string]*callSpec{},
		progress: m.Progress, m: loop.New(c.o.rules(m.MaxIterations)), toolbox: c.o.Toolbox}
	if m.Toolbox != nil {
		c.cur.toolbox = m.Toolbox
	}
	c.cur.unpersist, c.repair = c.repair, nil // in the history already
	c.add(m.Seed...)
	c.add(llm.Message{Role: llm.RoleUser, Content: m.Text})
	c.apply(ctx, c.cur.m.Start())
}

// apply carries out the loop's effects, in order.
func (c *conversation) apply(ctx actor.Context, effects []loop.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case loop.AskModel:
			if e.Limit != nil {
				c.o.Logger.Warn("tool loop limit", "conversation", c.id, "reason", e.Limit)
			}
			c.callLLM(ctx, e)
		case loop.RunCall:
			c.runCall(ctx, e)
		case loop.Record:
			msgs := e.Messages
			if c.cur.preRecorded && len(msgs) > 0 {
				msgs = msgs[1:] // the turn's assistant message, added before its dispatch
				c.cur.preRecorded = false
			}
			c.add(msgs...)
		case loop.BatchEnded:
			c.o.Metrics.batch(e.Calls, e.Peak, e.SumElapsed, c.o.Now().Sub(c.cur.batchAt))
			c.cur.specs = map[string]*callSpec{}
		case loop.Finish:
			if e.Limit == nil && (errors.Is(e.Err, ErrMaxIterations) || errors.Is(e.Err, ErrToolErrorLimit) ||
				errors.Is(e.Err, ErrRepeatedToolCall)) {
				c.o.Logger.Warn("tool loop limit", "conversation", c.id, "reason", e.Err) // on_limit = "error"
			}
			c.end(ctx, e)
		}
	}
}

// add appends messages to the history and to what is yet to be stored.
func (c *conversation) add(msgs ...llm.Message) {
	c.history = append(c.history, msgs...)
	c.cur.unpersist = append(c.cur.unpersist, msgs...)
}

func (c *conversation) onLLM(ctx actor.Context, m *llmDone) {
	t := c.cur
	if m.err != nil {
		if !errors.Is(m.err, ErrHistory) {
			m.err = fmt.Errorf("%w: %w", ErrLLM, m.err)
		}
		c.apply(ctx, t.m.ModelFailed(m.err))
		return
	}
	t.usage.InputTokens += m.resp.Usage.InputTokens
	t.usage.OutputTokens += m.resp.Usage.OutputTokens
	t.finish = m.resp.FinishReason
	c.gen++
	n := len(m.resp.Message.ToolCalls)
	t.gen, t.assistant, t.batchAt = c.gen, m.resp.Message, c.o.Now()
	t.calls, t.started = make([]plannedCall, n), make([]time.Time, n)
	effects := t.m.ModelAnswered(m.resp.Message)
	if startsCalls(effects) {
		c.dispatchAfterStore(ctx, m.resp.Message, effects)
		return
	}
	c.apply(ctx, effects)
}

// runCall starts call e.Index of the current turn: answered at once when
// the loop refused it or its target or arguments are wrong, else run by a
// tool-call actor.
func (c *conversation) runCall(ctx actor.Context, e loop.RunCall) {
	t := c.cur
	i, call := e.Index, t.assistant.ToolCalls[e.Index]
	// From here on the call has the offered name: it routes, it is audited
	// and shown under it. The history keeps the model's own.
	call.Name = t.names.original(call.Name)
	p := plannedCall{immediate: toolError(ErrRepeatedCall, e.Refusal)}
	switch {
	case e.Refusal != "":
	case i >= MaxCallsPerTurn:
		p = plannedCall{immediate: toolError(ErrTooManyCalls, fmt.Sprintf(
			"not run: one turn runs at most %d tool calls; this was call %d. Ask for fewer at a time.", MaxCallsPerTurn, i+1))}
	default:
		p = c.prepare(call)
	}
	t.calls[i] = p
	t.started[i] = c.o.Now()
	start := Progress{Kind: ProgressToolStart, ConversationID: c.id, Time: t.started[i], Iteration: t.m.Iterations(),
		CallID: call.ID, Agent: p.agentID, Tool: call.Name, Args: truncate(call.ArgumentsText(), MaxProgressArgs)}
	if p.spec != nil {
		// The agent's own name for its tool: the agent is a field of its own.
		start.RequestID, start.Tool = p.spec.requestID, p.spec.tool
	}
	t.progress.emit(start)
	if p.immediate != nil {
		c.immediate(ctx, i, call, p.agentID, *p.immediate)
		return
	}
	if c.o.Approvals != nil {
		// The gate sees every call that would run, whichever toolbox
		// resolved it: the node's tools, agent tools, edge_call.
		if why := c.o.Approvals.Gate(p.spec.target, call.Name); why != "" {
			c.awaitApproval(ctx, i, call, p.spec, why)
			return
		}
	}
	c.spawn(ctx, i, call, p.spec)
}

// spawn starts the tool-call actor of call i.
func (c *conversation) spawn(ctx actor.Context, i int, call llm.ToolCall, s *callSpec) {
	t := c.cur
	s.index, s.gen, s.progress, s.iteration = i, t.gen, t.progress, t.m.Iterations()
	s.started = c.o.Now()
	s.deadline = s.started.Add(s.timeout + c.o.ReplySlack)
	pid, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &toolCall{s: s} }, onHot),
		safeName(ctx.Self().Id, fmt.Sprintf("call-%d", callSeq.Add(1))))
	if err != nil {
		c.immediateAs(ctx, i, call, s.agentID, s.requestID, skills.Failed(wire.ErrInternal, fmt.Sprintf("start tool call: %v", err)))
		return
	}
	t.specs[pid.Id] = s
}

// immediate completes a call that never reached an agent; the audit write
// runs off the mailbox like any other.
func (c *conversation) immediate(ctx actor.Context, i int, call llm.ToolCall, agentID string, res skills.Output) {
	c.immediateAs(ctx, i, call, agentID, c.cur.origin, res)
}

// immediateAs is immediate, audited under requestID.
func (c *conversation) immediateAs(ctx actor.Context, i int, call llm.ToolCall, agentID, requestID string, res skills.Output) {
	self, root, o, convID, gen := ctx.Self(), ctx.ActorSystem().Root, c.o, c.id, c.cur.gen
	go func() {
		msg, aerr := completeCall(o, convID, call, agentID, requestID, "", res, 0, false)
		root.Send(self, &callDone{gen: gen, index: i, res: res, result: msg, audit: aerr})
	}()
}

func (c *conversation) onCall(ctx actor.Context, m *callDone) {
	t := c.cur
	if t == nil || m.gen != t.gen || !t.m.Awaiting(m.index) {
		return // a call of a turn that was canceled or already ended
	}
	i, call := m.index, t.assistant.ToolCalls[m.index]
	if m.pending != nil {
		t.audits = append(t.audits, m.pending)
	}
	call.Name = t.names.original(call.Name)
	elapsed := c.o.Now().Sub(t.started[i])
	ok := m.res.Succeeded()
	status := statusOf(m.res)
	c.o.Metrics.call(call.Name, t.calls[i].resolved, status, m.res.ErrorType(), elapsed)
	end := Progress{Kind: ProgressToolEnd, ConversationID: c.id, Time: c.o.Now(), Iteration: t.m.Iterations(), CallID: call.ID,
		Agent: t.calls[i].agentID, Tool: call.Name, Status: status, ErrorType: string(m.res.ErrorType()),
		ElapsedMS: elapsed.Milliseconds()}
	if s := t.calls[i].spec; s != nil {
		end.RequestID, end.Tool = s.requestID, s.tool
	}
	sum := CallSummary{Tool: call.Name, Success: ok}
	if ok {
		text := m.res.Text()
		end.Result, sum.Result = truncate(text, ProgressResultExcerpt), truncate(text, summaryBytes)
	} else {
		msg := m.res.ErrorText()
		end.Error, sum.Error = truncate(msg, ProgressResultExcerpt), truncate(msg, summaryBytes)
	}
	t.progress.emit(end)
	c.apply(ctx, t.m.CallEnded(i, loop.CallResult{Message: m.result, Failed: !ok, Summary: sum, Elapsed: elapsed, AuditErr: m.audit}))
}

// end finishes the current chat: what it added to the history is stored
// first, then the sender gets its answer and the next chat starts.
func (c *conversation) end(ctx actor.Context, f loop.Finish) {
	t := c.cur
	if t.cancel != nil {
		t.cancel()
	}
	t.cancelApprovals()
	t.gen = -1 // results still on their way belong to no turn
	c.seq++    // and neither does an LLM answer
	ans := &Answer{ConversationID: c.id, Text: f.Text, Err: f.Err, Iterations: t.m.Iterations(), ToolCalls: t.m.ToolCalls(),
		Usage: t.usage, Calls: t.m.Calls()}
	if f.Err == nil {
		ans.FinishReason = t.finish
	}
	if f.Limit != nil {
		ans.Limit = f.Limit.Error()
	}
	if t.preRecorded {
		// The turn's calls were dispatched (or about to be) and their
		// results are not all in: stored without results, the history
		// would hold calls a model can never see answered.
		c.add(closeCut(c.history)...)
		t.preRecorded = false
	}
	store, audits := c.storeFunc(t), t.takeAudits()
	self, root, timeout := ctx.Self(), ctx.ActorSystem().Root, c.o.AuditTimeout
	hot.Go(func() {
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if serr := store(sctx); serr != nil {
			ans.Err = errors.Join(ans.Err, serr)
		} else if aerr := awaitAudits(sctx, audits); aerr != nil && !errors.Is(ans.Err, ErrAudit) {
			// No answer is given without a record of every call.
			ans.Text, ans.Err = "", errors.Join(ans.Err, fmt.Errorf("%w: %w", ErrAudit, aerr))
		}
		root.Send(self, &finished{turn: t, ans: ans})
	})
}

func (c *conversation) onFinished(ctx actor.Context, m *finished) {
	if m.turn != c.cur {
		// A turn ends once; its answer goes to its own sender, never to the
		// chat that runs after it.
		c.o.Logger.Error("answer of a turn that is not running dropped", "conversation", c.id, "err", m.ans.Err)
		return
	}
	if c.cur.sender != nil {
		ctx.Send(c.cur.sender, m.ans)
	}
	c.cur = nil
	// The answer's write waited for every write before it: none is left
	// to order the next one after.
	c.lastStore = nil
	if m.ans.Err != nil && errors.Is(m.ans.Err, ErrHistory) {
		// Memory and store disagree now: stop, so that the next chat starts
		// from what is stored.
		c.o.Logger.Error("store conversation history", "conversation", c.id, "err", m.ans.Err)
		c.fail(ctx, m.ans.Err)
		return
	}
	c.next(ctx)
}
