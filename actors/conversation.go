package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
)

// Defaults of ConvOptions.
const (
	DefaultMaxIterations     = 10
	DefaultToolErrorLimit    = 3
	DefaultMaxIdenticalCalls = 1
	DefaultMaxParallel       = 5
	DefaultReplySlack        = 2 * time.Second
	DefaultCallRetries       = 3
	DefaultCallRetryWindow   = time.Minute
	DefaultLLMTimeout        = 5 * time.Minute
	DefaultAuditTimeout      = 10 * time.Second
	DefaultQueueLen          = 16
	DefaultIdleTimeout       = 10 * time.Minute
)

// What a conversation does when the loop hits a limit (max iterations,
// consecutive failing turns, a repeated identical call).
const (
	// OnLimitAnswer asks the model once more, offering no tools, for a
	// final answer from what it has; the Answer names the limit.
	OnLimitAnswer = "answer"
	// OnLimitError ends the chat with an error naming the limit.
	OnLimitError = "error"
)

// Errors that end a Chat, alone or (limits under OnLimitAnswer) beside an answer.
var (
	ErrMaxIterations    = errors.New("max tool iterations reached without a final answer")
	ErrToolErrorLimit   = errors.New("too many consecutive turns in which every tool call failed")
	ErrRepeatedToolCall = errors.New("the model kept repeating an identical tool call")
	ErrBusy             = errors.New("conversation has too many queued messages")
	ErrStopped          = errors.New("conversation stopped before it answered")
	ErrCanceled         = errors.New("chat canceled")
	ErrHistory          = errors.New("conversation history")
	// ErrAudit ends a chat whose tool call could not be recorded: an
	// answer that the audit trail does not back is not given.
	ErrAudit = errors.New("audit trail cannot record")
	// ErrLLM wraps a failed completion (an *llm.Error inside says why).
	ErrLLM = errors.New("llm call failed")
	// ErrSeeded refuses a Chat with a Seed for a conversation that already
	// has history.
	ErrSeeded = errors.New("conversation already has history; a seeded chat needs a new conversation id")
)

// ErrRepeatedCall is the error type of a tool call refused because the
// same tool with the same arguments already ran in this chat.
const ErrRepeatedCall wire.ErrorType = "repeated_call"

// AuditLog is where tool calls are recorded.
type AuditLog interface {
	RecordToolCall(ctx context.Context, c persistence.ToolCall) error
}

// HistoryStore keeps conversations across restarts. AppendHistory returns
// only once the messages are durable.
type HistoryStore interface {
	LoadHistory(ctx context.Context, conversationID string) ([]llm.Message, error)
	AppendHistory(ctx context.Context, conversationID string, msgs []llm.Message) error
}

// ConvOptions configure conversations. Provider is required, and so is
// Edges unless Toolbox offers only local tools.
type ConvOptions struct {
	// Name is the manager actor's name, unique in its actor system
	// (default "conversations").
	Name     string
	Provider llm.Provider
	// Edges routes commands to edge agents.
	Edges *Edges
	// Toolbox offers tools and resolves calls; nil means an EdgeToolbox
	// over Edges in ToolsDirect mode.
	Toolbox Toolbox
	Audit   AuditLog
	// History, when set, stores every step of every conversation and
	// reloads it when a conversation actor starts again.
	History HistoryStore
	// LLMLog, when set, records every completion request: provider, model,
	// tokens, latency, outcome (cost tracking). A request is recorded before
	// its answer is acted on.
	LLMLog persistence.LLMCallLog
	// Metrics, when set, aggregates loop counters.
	Metrics *Metrics
	// Node names this node in audit records; Side is the side it writes
	// as (default persistence.SideOrchestrator; an edge agent's own loop
	// writes persistence.SideEdge).
	Node   string
	Side   string
	System string
	Model  string
	// MaxIterations bounds LLM turns that request tools (default 10).
	MaxIterations int
	// ToolErrorLimit ends the loop after this many consecutive turns in
	// which every tool call failed (default 3).
	ToolErrorLimit int
	// MaxIdenticalCalls is how often one tool may run with the same
	// arguments in one chat (default 1). One more identical call is refused
	// with an error telling the model so; another after that ends the loop.
	MaxIdenticalCalls int
	// OnLimit is OnLimitAnswer (default) or OnLimitError.
	OnLimit string
	// MaxParallel bounds tool calls of one turn running at once (default 5).
	MaxParallel int
	// TimeoutRules give each tool category its default and maximum timeout;
	// missing categories use DefaultTimeoutRules.
	TimeoutRules map[string]TimeoutRule
	// ReplySlack is added to a tool's timeout for the MQTT round trip (default 2 s).
	ReplySlack time.Duration
	// CallRetries bounds restarts of a failing tool-call actor within
	// CallRetryWindow (defaults 3 and 1 min).
	CallRetries     int
	CallRetryWindow time.Duration
	// LLMTimeout bounds one completion (default 5 min: a Pi's local model is slow).
	LLMTimeout   time.Duration
	AuditTimeout time.Duration
	// QueueLen bounds chats waiting behind a running one (default 16).
	QueueLen int
	// IdleTimeout stops a conversation actor that had no message for this
	// long (default 10 min), so idle conversations hold no memory.
	IdleTimeout time.Duration
	Now         func() time.Time
	Logger      *slog.Logger

	// fault, when set by tests, runs at the start of every tool-call attempt.
	fault   func(call llm.ToolCall, attempt int)
	schemas *schemaCache
}

func (o *ConvOptions) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	defInt(&o.MaxIterations, DefaultMaxIterations)
	defInt(&o.ToolErrorLimit, DefaultToolErrorLimit)
	defInt(&o.MaxIdenticalCalls, DefaultMaxIdenticalCalls)
	defInt(&o.MaxParallel, DefaultMaxParallel)
	defInt(&o.CallRetries, DefaultCallRetries)
	defInt(&o.QueueLen, DefaultQueueLen)
	if o.OnLimit == "" {
		o.OnLimit = OnLimitAnswer
	}
	if o.Side == "" {
		o.Side = persistence.SideOrchestrator
	}
	rules := make(map[string]TimeoutRule, len(DefaultTimeoutRules))
	for k, v := range DefaultTimeoutRules {
		rules[k] = v
	}
	for k, v := range o.TimeoutRules {
		r := rules[k]
		if v.Default > 0 {
			r.Default = v.Default
		}
		if v.Max > 0 {
			r.Max = v.Max
		}
		rules[k] = r
	}
	o.TimeoutRules = rules
	def(&o.ReplySlack, DefaultReplySlack)
	def(&o.CallRetryWindow, DefaultCallRetryWindow)
	def(&o.LLMTimeout, DefaultLLMTimeout)
	def(&o.AuditTimeout, DefaultAuditTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	if o.Toolbox == nil && o.Edges != nil {
		o.Toolbox = &EdgeToolbox{Edges: o.Edges}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.schemas = &schemaCache{}
}

// Conversations is the handle of the conversation manager.
type Conversations struct {
	PID *actor.PID
}

// SpawnConversations starts the manager that owns one actor per
// conversation id.
func SpawnConversations(root *actor.RootContext, o ConvOptions) (*Conversations, error) {
	if o.Provider == nil || (o.Edges == nil && o.Toolbox == nil) {
		return nil, fmt.Errorf("spawn conversations: a provider and edges or a toolbox are required")
	}
	switch o.OnLimit {
	case "", OnLimitAnswer, OnLimitError:
	default:
		return nil, fmt.Errorf("spawn conversations: on_limit %q, want %q or %q", o.OnLimit, OnLimitAnswer, OnLimitError)
	}
	o.fill()
	props := actor.PropsFromProducer(func() actor.Actor {
		return &manager{o: &o, children: map[string]*actor.PID{}, forwarded: map[string]int{}}
	})
	name := o.Name
	if name == "" {
		name = "conversations"
	}
	pid, err := root.SpawnNamed(props, safeName("", name))
	if err != nil {
		return nil, fmt.Errorf("spawn conversations: %w", err)
	}
	return &Conversations{PID: pid}, nil
}

type manager struct {
	o        *ConvOptions
	children map[string]*actor.PID
	// forwarded counts the chats sent to each child, so that an idle
	// child's request to stop is ignored when a chat is already on its way.
	forwarded map[string]int
}

func (m *manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *Chat:
		pid, ok := m.children[msg.ConversationID]
		if !ok {
			id := msg.ConversationID
			props := actor.PropsFromProducer(func() actor.Actor { return &conversation{id: id, o: m.o} },
				actor.WithSupervisor(actor.NewOneForOneStrategy(m.o.CallRetries, m.o.CallRetryWindow,
					func(any) actor.Directive { return actor.RestartDirective })))
			var err error
			pid, err = ctx.SpawnNamed(props, safeName(ctx.Self().Id, "conv-"+id))
			if err != nil {
				ctx.Respond(&Answer{ConversationID: id, Err: fmt.Errorf("start conversation: %w", err)})
				return
			}
			m.children[id] = pid
			m.forwarded[id] = 0
		}
		m.forwarded[msg.ConversationID]++
		ctx.Forward(pid)
	case *Cancel:
		if pid, ok := m.children[msg.ConversationID]; ok {
			ctx.Forward(pid)
		}
	case *passivate:
		pid, ok := m.children[msg.id]
		if !ok || !pid.Equal(msg.pid) {
			return
		}
		if !msg.force && m.forwarded[msg.id] != msg.received {
			return // a chat crossed the request: the child stays
		}
		delete(m.children, msg.id)
		delete(m.forwarded, msg.id)
		ctx.Poison(pid)
	case *actor.Terminated:
		for k, pid := range m.children {
			if pid.Equal(msg.Who) {
				delete(m.children, k)
				delete(m.forwarded, k)
			}
		}
	}
}

// passivate is a conversation asking its manager to stop it: when idle
// (honoured only if received equals the chats forwarded to it), or when
// broken (force).
type passivate struct {
	id       string
	pid      *actor.PID
	received int
	force    bool
}

// requestSeq numbers request ids; callSeq names tool-call actors.
var requestSeq, callSeq atomic.Uint64

type queued struct {
	chat   *Chat
	sender *actor.PID
}

// plannedCall is one tool call of the current turn: either a spec to run or a
// result known at once (refused before anything was sent).
type plannedCall struct {
	spec      *callSpec
	immediate *wire.ToolResult
	agentID   string
}

// turn is the state of one Chat being answered.
type turn struct {
	chat       *Chat // the message being answered, for Cancel.Chat
	sender     *actor.PID
	origin     string // Chat.RequestID
	system     string // Chat.System or ConvOptions.System
	maxTokens  int
	executed   []CallSummary
	iterations int
	toolCalls  int
	usage      llm.Usage
	seq        int
	cancel     context.CancelFunc
	// seen counts identical calls (callSignature) in this chat; warned
	// marks those the model was already told not to repeat.
	seen      map[string]int
	warned    map[string]bool
	errTurns  int   // consecutive turns in which every call failed
	limit     error // set once a limit is hit: the final, tool-less call runs
	stopAfter bool  // the model repeated a call it was warned about: end after this turn
	unpersist []llm.Message
	progress  ProgressFunc
	auditErr  error // the first failed audit write of this chat

	// the tool calls of the current LLM turn
	gen       int
	assistant llm.Message
	calls     []plannedCall
	results   []llm.Message
	summaries []CallSummary
	failed    []bool
	have      []bool
	started   []time.Time
	remaining int
	next      int
	running   int
	peak      int
	batchAt   time.Time
	sumElapse time.Duration
	specs     map[string]*callSpec // by child actor id
}

// conversation runs the tool loop for one conversation id.
type conversation struct {
	id      string
	o       *ConvOptions
	history []llm.Message
	loading bool
	// received counts chats, for the passivation handshake.
	received int
	// broken is set when stored and in-memory history may disagree (a load
	// or store failed): every chat gets it until the actor stops and the
	// next one loads afresh.
	broken error
	queue  []queued
	cur    *turn
	seq    int
	gen    int
}

func (c *conversation) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.SetReceiveTimeout(c.o.IdleTimeout)
		c.load(ctx)
	case *actor.ReceiveTimeout:
		if c.cur == nil && len(c.queue) == 0 && !c.loading {
			// The manager stops us, so no Chat is forwarded to a dead actor.
			ctx.Send(ctx.Parent(), &passivate{id: c.id, pid: ctx.Self(), received: c.received})
		}
	case *historyLoaded:
		c.onLoaded(ctx, m)
	case *Chat:
		c.received++
		if c.broken != nil {
			ctx.Respond(&Answer{ConversationID: c.id, Err: c.broken})
			return
		}
		if c.cur != nil || c.loading {
			if len(c.queue) >= c.o.QueueLen {
				ctx.Respond(&Answer{ConversationID: c.id, Err: ErrBusy})
				return
			}
			c.queue = append(c.queue, queued{chat: m, sender: ctx.Sender()})
			return
		}
		c.begin(ctx, m, ctx.Sender())
	case *Cancel:
		c.onCancel(ctx, m)
	case *llmDone:
		if c.cur == nil || m.seq != c.cur.seq {
			return
		}
		c.onLLM(ctx, m)
	case *callDone:
		c.onCall(ctx, m)
	case *finished:
		c.onFinished(ctx, m)
	case *actor.Terminated:
		c.onTerminated(ctx, m.Who)
	case *actor.Stopping:
		if c.cur != nil {
			if c.cur.cancel != nil {
				c.cur.cancel()
			}
			if c.cur.sender != nil {
				ctx.Send(c.cur.sender, &Answer{ConversationID: c.id, Err: ErrStopped})
			}
		}
		for _, q := range c.queue {
			ctx.Send(q.sender, &Answer{ConversationID: c.id, Err: ErrStopped})
		}
	}
}

// load reads the stored history off the mailbox; chats queue meanwhile.
func (c *conversation) load(ctx actor.Context) {
	if c.o.History == nil {
		return
	}
	c.loading = true
	self, root, id, h, timeout := ctx.Self(), ctx.ActorSystem().Root, c.id, c.o.History, c.o.AuditTimeout
	go func() {
		lctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		msgs, err := h.LoadHistory(lctx, id)
		root.Send(self, &historyLoaded{msgs: msgs, err: err})
	}()
}

func (c *conversation) onLoaded(ctx actor.Context, m *historyLoaded) {
	c.loading = false
	if m.err != nil {
		// Answering without the stored history would silently fork the
		// conversation: refuse, and stop so that the next chat loads again.
		c.o.Logger.Error("load conversation history", "conversation", c.id, "err", m.err)
		c.fail(ctx, fmt.Errorf("%w: load %s: %w", ErrHistory, c.id, m.err))
		return
	}
	c.history = m.msgs
	c.next(ctx)
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
	c.queue = c.queue[1:]
	c.begin(ctx, q.chat, q.sender)
}

func (c *conversation) begin(ctx actor.Context, m *Chat, sender *actor.PID) {
	system := m.System
	if system == "" {
		system = c.o.System
	}
	c.cur = &turn{chat: m, sender: sender, origin: m.RequestID, system: system, maxTokens: m.MaxTokens, specs: map[string]*callSpec{},
		seen: map[string]int{}, warned: map[string]bool{}, progress: m.Progress}
	if len(m.Seed) > 0 {
		if len(c.history) > 0 {
			c.cur = nil
			ctx.Send(sender, &Answer{ConversationID: c.id, Err: ErrSeeded})
			c.next(ctx)
			return
		}
		c.add(m.Seed...)
	}
	c.add(llm.Message{Role: llm.RoleUser, Content: m.Text})
	c.callLLM(ctx)
}

// add appends messages to the history and to what is yet to be stored.
func (c *conversation) add(msgs ...llm.Message) {
	c.history = append(c.history, msgs...)
	c.cur.unpersist = append(c.cur.unpersist, msgs...)
}

func (c *conversation) callLLM(ctx actor.Context) {
	c.seq++
	t := c.cur
	t.seq = c.seq
	req := llm.Request{Model: c.o.Model, System: t.system, MaxTokens: t.maxTokens, Messages: append([]llm.Message(nil), c.history...)}
	if t.limit == nil {
		req.Tools = c.o.Toolbox.Defs()
	} else {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf(
			"[evoclaw] Stop using tools: %v. Answer the user now from the results above, and say what could not be done.", t.limit)})
	}
	lctx, cancel := context.WithTimeout(context.Background(), c.o.LLMTimeout)
	t.cancel = cancel
	store := c.storeFunc(t)
	self, root, seq, p, metrics, auditTimeout := ctx.Self(), ctx.ActorSystem().Root, c.seq, c.o.Provider, c.o.Metrics, c.o.AuditTimeout
	record := c.llmRecorder(t.iterations)
	progress, iteration, convID, now := t.progress, t.iterations, c.id, c.o.Now
	progress.emit(Progress{Kind: ProgressLLMStart, ConversationID: convID, Time: now(), Iteration: iteration})
	go func() {
		defer cancel()
		// What the turn added is durable before the model sees it, so a
		// crash never loses a step the model already acted on. Its own
		// context: a canceled chat still stores what it said.
		sctx, scancel := context.WithTimeout(context.Background(), auditTimeout)
		err := store(sctx)
		scancel()
		if err != nil {
			progress.emit(Progress{Kind: ProgressLLMEnd, ConversationID: convID, Time: now(), Iteration: iteration,
				Status: wire.StatusError, Error: truncate(err.Error(), summaryBytes)})
			root.Send(self, &llmDone{seq: seq, err: err})
			return
		}
		began := time.Now()
		resp, err := p.Complete(lctx, req)
		timedOut := errors.Is(lctx.Err(), context.DeadlineExceeded) && err != nil
		if timedOut {
			err = fmt.Errorf("llm %s: no answer within %s: %w", p.Name(), c.o.LLMTimeout, err)
		}
		metrics.llm(err)
		took := time.Since(began)
		record(resp, err, timedOut, took)
		end := Progress{Kind: ProgressLLMEnd, ConversationID: convID, Time: now(), Iteration: iteration,
			Status: wire.StatusSuccess, ElapsedMS: took.Milliseconds()}
		if err != nil {
			end.Status, end.Error = wire.StatusError, truncate(err.Error(), summaryBytes)
			end.ErrorType = llmErrorType(err, timedOut)
		}
		progress.emit(end)
		root.Send(self, &llmDone{seq: seq, resp: resp, err: err})
	}()
}

// llmRecorder returns the function that audits one completion of turn
// iteration (no-op without an LLMLog).
func (c *conversation) llmRecorder(iteration int) func(resp llm.Response, err error, timedOut bool, took time.Duration) {
	if c.o.LLMLog == nil {
		return func(llm.Response, error, bool, time.Duration) {}
	}
	o, id := c.o, c.id
	return func(resp llm.Response, err error, timedOut bool, took time.Duration) {
		provider := resp.Provider
		if provider == "" {
			provider = o.Provider.Name()
		}
		rec := persistence.LLMCall{Time: o.Now().UTC(), Node: o.Node, ConversationID: id, Provider: provider,
			Model: resp.Model, InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
			LatencyMs: took.Milliseconds(), Status: persistence.StatusSuccess, Iteration: iteration}
		if rec.Model == "" {
			rec.Model = o.Model
		}
		if err != nil {
			rec.Status, rec.Error, rec.ErrorType = persistence.StatusError, truncate(err.Error(), 1024), llmErrorType(err, timedOut)
		}
		actx, cancel := context.WithTimeout(context.Background(), o.AuditTimeout)
		defer cancel()
		if aerr := o.LLMLog.RecordLLMCall(actx, rec); aerr != nil {
			o.Logger.Error("audit llm call", "conversation", id, "err", aerr)
		}
	}
}

// storeFunc takes the messages not yet stored and returns the function
// that stores them (no-op without a HistoryStore).
func (c *conversation) storeFunc(t *turn) func(context.Context) error {
	msgs := t.unpersist
	t.unpersist = nil
	if c.o.History == nil || len(msgs) == 0 {
		return func(context.Context) error { return nil }
	}
	h, id := c.o.History, c.id
	return func(ctx context.Context) error {
		if err := h.AppendHistory(ctx, id, msgs); err != nil {
			return fmt.Errorf("%w: store %d messages of %s: %w", ErrHistory, len(msgs), id, err)
		}
		return nil
	}
}

func (c *conversation) onLLM(ctx actor.Context, m *llmDone) {
	t := c.cur
	if m.err != nil {
		if !errors.Is(m.err, ErrHistory) {
			m.err = fmt.Errorf("%w: %w", ErrLLM, m.err)
		}
		c.end(ctx, "", m.err)
		return
	}
	t.usage.InputTokens += m.resp.Usage.InputTokens
	t.usage.OutputTokens += m.resp.Usage.OutputTokens
	msg := m.resp.Message
	msg.Role = llm.RoleAssistant
	if t.limit != nil {
		// The tool-less final call: whatever tools it still asks for are
		// not run.
		msg.ToolCalls = nil
		if strings.TrimSpace(msg.Content) == "" {
			c.end(ctx, "", t.limit)
			return
		}
		c.add(msg)
		c.end(ctx, msg.Content, nil)
		return
	}
	if len(msg.ToolCalls) == 0 {
		c.add(msg)
		c.end(ctx, msg.Content, nil)
		return
	}
	if t.iterations >= c.o.MaxIterations {
		c.hitLimit(ctx, fmt.Errorf("%w (%d)", ErrMaxIterations, c.o.MaxIterations))
		return
	}
	t.iterations++
	t.toolCalls += len(msg.ToolCalls)
	c.plan(ctx, msg)
}

// hitLimit applies OnLimit: an error, or one last call offering no tools.
func (c *conversation) hitLimit(ctx actor.Context, why error) {
	c.o.Logger.Warn("tool loop limit", "conversation", c.id, "reason", why)
	if c.o.OnLimit == OnLimitError {
		c.end(ctx, "", why)
		return
	}
	c.cur.limit = why
	c.callLLM(ctx)
}

// plan decides, for every call of an assistant turn, whether it runs or is
// answered at once: repeated identical calls, unknown tools and arguments
// that break the tool's schema never reach an agent.
func (c *conversation) plan(ctx actor.Context, msg llm.Message) {
	t := c.cur
	c.gen++
	n := len(msg.ToolCalls)
	t.gen, t.assistant = c.gen, msg
	t.calls, t.results, t.failed, t.have, t.started = make([]plannedCall, n), make([]llm.Message, n), make([]bool, n), make([]bool, n), make([]time.Time, n)
	t.summaries = make([]CallSummary, n)
	t.remaining, t.next, t.running, t.peak, t.sumElapse, t.batchAt = n, 0, 0, 0, 0, c.o.Now()
	stop := false
	for i, call := range msg.ToolCalls {
		sig := callSignature(call.Name, call.Arguments)
		t.seen[sig]++
		if t.seen[sig] > c.o.MaxIdenticalCalls {
			if t.warned[sig] {
				stop = true
			}
			t.warned[sig] = true
			t.calls[i] = plannedCall{immediate: toolError(ErrRepeatedCall, fmt.Sprintf(
				"%s was already called with these exact arguments in this request; its result is above. Do not call it again with the same arguments: use that result, try something different, or answer the user.", call.Name))}
			continue
		}
		t.calls[i] = c.prepare(call)
	}
	if stop {
		// The model was told and repeated the call anyway: the turn's
		// results are kept, and the loop ends.
		c.o.Logger.Warn("repeated identical tool call after a warning", "conversation", c.id)
	}
	t.stopAfter = stop
	c.spawnMore(ctx)
}

// prepare resolves one call and checks its arguments.
func (c *conversation) prepare(call llm.ToolCall) plannedCall {
	target, bad := c.o.Toolbox.Resolve(call)
	if bad != nil {
		return plannedCall{immediate: bad, agentID: target.AgentID}
	}
	if call.ArgumentsError != "" && target.Prompt == nil && string(target.Args) == string(call.Arguments) {
		return plannedCall{agentID: target.AgentID, immediate: toolError(wire.ErrInvalidParams, fmt.Sprintf(
			"Invalid parameters for %q: the arguments are not valid JSON (%s): %s. %s", call.Name, call.ArgumentsError,
			truncate(call.ArgumentsText(), 200), paramLists(target.Schema)))}
	}
	var args map[string]any
	if err := json.Unmarshal(target.Args, &args); err != nil || args == nil {
		return plannedCall{agentID: target.AgentID, immediate: toolError(wire.ErrInvalidParams, fmt.Sprintf(
			"Invalid parameters for %q: arguments are not a JSON object: %s. %s", call.Name, truncate(string(target.Args), 200), paramLists(target.Schema)))}
	}
	if msg := c.o.schemas.validateArgs(call.Name, target.Schema, args); msg != "" {
		return plannedCall{agentID: target.AgentID, immediate: toolError(wire.ErrInvalidParams, msg)}
	}
	timeout := toolTimeout(c.o.TimeoutRules, target.Category, target.OwnTimeoutMS)
	prefix := "tool"
	if target.Prompt != nil {
		prefix = "prompt"
	}
	requestID := fmt.Sprintf("%s-%d-%d", prefix, c.o.Now().UnixNano(), requestSeq.Add(1))
	if target.Local != nil && c.cur.origin != "" {
		// Nothing goes on the wire: audit the run under the request that
		// started the chat, which links it to the caller's record.
		requestID = c.cur.origin
	}
	s := &callSpec{convID: c.id, call: call, target: target, agentID: target.AgentID, tool: target.Tool,
		requestID: requestID, timeout: timeout, o: c.o}
	if c.o.Edges != nil {
		s.edges = c.o.Edges.PID
	}
	return plannedCall{spec: s, agentID: target.AgentID}
}

// spawnMore starts tool calls of the current turn up to MaxParallel.
func (c *conversation) spawnMore(ctx actor.Context) {
	t := c.cur
	for t.next < len(t.calls) && t.running < c.o.MaxParallel {
		i := t.next
		t.next++
		p := t.calls[i]
		call := t.assistant.ToolCalls[i]
		t.running++
		t.peak = max(t.peak, t.running)
		t.started[i] = c.o.Now()
		start := Progress{Kind: ProgressToolStart, ConversationID: c.id, Time: t.started[i], Iteration: t.iterations,
			CallID: call.ID, Agent: p.agentID, Tool: call.Name, Args: truncate(call.ArgumentsText(), MaxProgressArgs)}
		if p.spec != nil {
			start.RequestID = p.spec.requestID
		}
		t.progress.emit(start)
		if p.immediate != nil {
			c.immediate(ctx, i, call, p.agentID, *p.immediate)
			continue
		}
		s := p.spec
		s.index, s.gen, s.progress = i, t.gen, t.progress
		s.deadline = c.o.Now().Add(s.timeout + c.o.ReplySlack)
		pid, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &toolCall{s: s} }),
			safeName(ctx.Self().Id, fmt.Sprintf("call-%d", callSeq.Add(1))))
		if err != nil {
			c.immediate(ctx, i, call, s.agentID, wire.ToolResult{Status: wire.StatusError, ErrorType: wire.ErrInternal,
				Error: fmt.Sprintf("start tool call: %v", err)})
			continue
		}
		t.specs[pid.Id] = s
	}
}

// immediate completes a call that never reached an agent; the audit write
// runs off the mailbox like any other.
func (c *conversation) immediate(ctx actor.Context, i int, call llm.ToolCall, agentID string, res wire.ToolResult) {
	self, root, o, convID, gen, origin := ctx.Self(), ctx.ActorSystem().Root, c.o, c.id, c.cur.gen, c.cur.origin
	res.Tool = call.Name
	go func() {
		msg, aerr := completeCall(o, convID, call, agentID, origin, res)
		root.Send(self, &callDone{gen: gen, index: i, res: res, result: msg, audit: aerr})
	}()
}

func (c *conversation) onCall(ctx actor.Context, m *callDone) {
	t := c.cur
	if t == nil || m.gen != t.gen || m.index >= len(t.have) || t.have[m.index] {
		return // a call of a turn that was canceled or already ended
	}
	i := m.index
	t.have[i] = true
	t.results[i] = m.result
	t.failed[i] = m.res.Status != wire.StatusSuccess
	t.remaining--
	t.running--
	if m.audit != nil && t.auditErr == nil {
		t.auditErr = m.audit
	}
	elapsed := c.o.Now().Sub(t.started[i])
	t.sumElapse += elapsed
	call := t.assistant.ToolCalls[i]
	c.o.Metrics.call(call.Name, m.res.Status, m.res.ErrorType, elapsed)
	end := Progress{Kind: ProgressToolEnd, ConversationID: c.id, Time: c.o.Now(), Iteration: t.iterations, CallID: call.ID,
		Agent: t.calls[i].agentID, Tool: call.Name, Status: m.res.Status, ErrorType: string(m.res.ErrorType),
		ElapsedMS: elapsed.Milliseconds()}
	if t.calls[i].spec != nil {
		end.RequestID = t.calls[i].spec.requestID
	}
	if m.res.Status == wire.StatusSuccess {
		end.Result = truncate(m.res.Result, ProgressResultExcerpt)
	} else {
		end.Error = truncate(m.res.Error, ProgressResultExcerpt)
	}
	t.progress.emit(end)
	sum := CallSummary{Tool: call.Name, Success: m.res.Status == wire.StatusSuccess}
	if sum.Success {
		sum.Result = truncate(m.res.Result, summaryBytes)
	} else {
		sum.Error = truncate(m.res.Error, summaryBytes)
	}
	t.summaries[i] = sum
	if t.remaining > 0 {
		c.spawnMore(ctx)
		return
	}
	c.o.Metrics.batch(len(t.calls), t.peak, t.sumElapse, c.o.Now().Sub(t.batchAt))
	t.executed = append(t.executed, t.summaries...) // in call order
	c.add(t.assistant)
	c.add(t.results...)
	t.specs = map[string]*callSpec{}
	allFailed := true
	for _, f := range t.failed {
		allFailed = allFailed && f
	}
	if allFailed {
		t.errTurns++
	} else {
		t.errTurns = 0
	}
	switch {
	case t.auditErr != nil:
		// Nothing more runs, and no answer is given, without a record.
		c.end(ctx, "", fmt.Errorf("%w: %w", ErrAudit, t.auditErr))
	case t.stopAfter:
		c.hitLimit(ctx, ErrRepeatedToolCall)
	case t.errTurns >= c.o.ToolErrorLimit:
		c.hitLimit(ctx, fmt.Errorf("%w (%d)", ErrToolErrorLimit, c.o.ToolErrorLimit))
	default:
		c.callLLM(ctx)
	}
}

// onTerminated turns a tool-call actor that the supervisor gave up on into
// an error result, so the conversation always goes on.
func (c *conversation) onTerminated(ctx actor.Context, who *actor.PID) {
	t := c.cur
	if t == nil {
		return
	}
	s, ok := t.specs[who.Id]
	if !ok {
		return
	}
	delete(t.specs, who.Id)
	if s.finished.Load() {
		return // its callDone is on the way
	}
	reason, _ := s.lastFailure.Load().(string)
	res := wire.ToolResult{Status: wire.StatusError, Tool: s.tool, ErrorType: wire.ErrInternal,
		Error: fmt.Sprintf("tool call failed after %d attempts: %s", s.attempts.Load(), reason)}
	if strings.HasPrefix(reason, "transient: ") {
		res.ErrorType = wire.ErrAgentOffline
	}
	self, root, o := ctx.Self(), ctx.ActorSystem().Root, c.o
	go func() {
		msg, aerr := completeCall(o, s.convID, s.call, s.agentID, s.requestID, res)
		root.Send(self, &callDone{gen: s.gen, index: s.index, res: res, result: msg, audit: aerr})
	}()
}

// onCancel abandons the current chat (or m.Chat, wherever it is): the LLM
// call is canceled, running tool calls are stopped and their agents told to
// forget them. A queued chat is only dropped.
func (c *conversation) onCancel(ctx actor.Context, m *Cancel) {
	t := c.cur
	if m.Chat != nil && (t == nil || t.chat != m.Chat) {
		for i, q := range c.queue {
			if q.chat == m.Chat {
				c.queue = append(c.queue[:i], c.queue[i+1:]...)
				ctx.Send(q.sender, &Answer{ConversationID: c.id, Err: ErrCanceled})
				return
			}
		}
		return // it ended already
	}
	if t == nil {
		return
	}
	for id, s := range t.specs {
		if s.edges != nil && s.agentID != "" && s.target.Local == nil {
			ctx.Send(s.edges, &CancelDispatch{AgentID: s.agentID, RequestID: s.requestID})
		}
		ctx.Stop(actor.NewPID(ctx.Self().Address, id))
	}
	t.specs = map[string]*callSpec{}
	c.end(ctx, "", ErrCanceled)
}

// end finishes the current chat: what it added to the history is stored
// first, then the sender gets its answer and the next chat starts.
func (c *conversation) end(ctx actor.Context, text string, err error) {
	t := c.cur
	if t.cancel != nil {
		t.cancel()
	}
	t.gen = -1 // results still on their way belong to no turn
	c.seq++    // and neither does an LLM answer
	ans := &Answer{ConversationID: c.id, Text: text, Err: err, Iterations: t.iterations, ToolCalls: t.toolCalls, Usage: t.usage, Calls: t.executed}
	if t.limit != nil {
		ans.Limit = t.limit.Error()
	}
	store := c.storeFunc(t)
	self, root, timeout := ctx.Self(), ctx.ActorSystem().Root, c.o.AuditTimeout
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if serr := store(sctx); serr != nil {
			ans.Err = errors.Join(ans.Err, serr)
		}
		root.Send(self, &finished{ans: ans})
	}()
}

func (c *conversation) onFinished(ctx actor.Context, m *finished) {
	if c.cur != nil && c.cur.sender != nil {
		ctx.Send(c.cur.sender, m.ans)
	}
	c.cur = nil
	if m.ans.Err != nil && errors.Is(m.ans.Err, ErrHistory) {
		// Memory and store disagree now: stop, so that the next chat starts
		// from what is stored.
		c.o.Logger.Error("store conversation history", "conversation", c.id, "err", m.ans.Err)
		c.fail(ctx, m.ans.Err)
		return
	}
	c.next(ctx)
}

// summaryBytes bounds the result or error kept in a CallSummary.
const summaryBytes = 512

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
