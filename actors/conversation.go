package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
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
	DefaultMaxIterations   = 10
	DefaultMaxParallel     = 5
	DefaultToolTimeout     = 30 * time.Second
	DefaultMaxToolTimeout  = 300 * time.Second
	DefaultReplySlack      = 2 * time.Second
	DefaultCallRetries     = 3
	DefaultCallRetryWindow = time.Minute
	DefaultLLMTimeout      = 5 * time.Minute
	DefaultAuditTimeout    = 10 * time.Second
	DefaultQueueLen        = 16
	DefaultIdleTimeout     = 10 * time.Minute
)

// Errors that end a Chat without an answer.
var (
	ErrMaxIterations = errors.New("max tool iterations reached without a final answer")
	ErrBusy          = errors.New("conversation has too many queued messages")
	ErrStopped       = errors.New("conversation stopped before it answered")
)

// AuditLog is where tool calls are recorded.
type AuditLog interface {
	RecordToolCall(ctx context.Context, c persistence.ToolCall) error
}

// ConvOptions configure conversations. Provider and Edges are required.
type ConvOptions struct {
	Provider llm.Provider
	Edges    *Edges
	Audit    AuditLog
	// Node names this orchestrator in audit records.
	Node   string
	System string
	Model  string
	// MaxIterations bounds LLM turns that request tools (default 10).
	MaxIterations int
	// MaxParallel bounds tool calls of one turn running at once (default 5).
	MaxParallel int
	// DefaultToolTimeout applies when a tool states none (default 30 s);
	// MaxToolTimeout clamps any tool's timeout (default 300 s).
	DefaultToolTimeout time.Duration
	MaxToolTimeout     time.Duration
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
	fault func(call llm.ToolCall, attempt int)
}

func (o *ConvOptions) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = DefaultMaxIterations
	}
	if o.MaxParallel <= 0 {
		o.MaxParallel = DefaultMaxParallel
	}
	if o.CallRetries <= 0 {
		o.CallRetries = DefaultCallRetries
	}
	if o.QueueLen <= 0 {
		o.QueueLen = DefaultQueueLen
	}
	def(&o.DefaultToolTimeout, DefaultToolTimeout)
	def(&o.MaxToolTimeout, DefaultMaxToolTimeout)
	def(&o.ReplySlack, DefaultReplySlack)
	def(&o.CallRetryWindow, DefaultCallRetryWindow)
	def(&o.LLMTimeout, DefaultLLMTimeout)
	def(&o.AuditTimeout, DefaultAuditTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Conversations is the handle of the conversation manager.
type Conversations struct {
	PID *actor.PID
}

// SpawnConversations starts the manager that owns one actor per
// conversation id.
func SpawnConversations(root *actor.RootContext, o ConvOptions) (*Conversations, error) {
	if o.Provider == nil || o.Edges == nil {
		return nil, fmt.Errorf("spawn conversations: provider and edges are required")
	}
	o.fill()
	props := actor.PropsFromProducer(func() actor.Actor {
		return &manager{o: &o, children: map[string]*actor.PID{}}
	})
	pid, err := root.SpawnNamed(props, "conversations")
	if err != nil {
		return nil, fmt.Errorf("spawn conversations: %w", err)
	}
	return &Conversations{PID: pid}, nil
}

type manager struct {
	o        *ConvOptions
	children map[string]*actor.PID
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
			pid, err = ctx.SpawnNamed(props, "conv-"+id)
			if err != nil {
				ctx.Respond(&Answer{ConversationID: id, Err: fmt.Errorf("start conversation: %w", err)})
				return
			}
			m.children[id] = pid
		}
		ctx.Forward(pid)
	case *passivate:
		if pid, ok := m.children[msg.id]; ok && pid.Equal(msg.pid) {
			delete(m.children, msg.id)
			ctx.Poison(pid)
		}
	case *actor.Terminated:
		for k, pid := range m.children {
			if pid.Equal(msg.Who) {
				delete(m.children, k)
			}
		}
	}
}

// passivate is an idle conversation asking its manager to stop it.
type passivate struct {
	id  string
	pid *actor.PID
}

var requestSeq atomic.Uint64

type queued struct {
	chat   *Chat
	sender *actor.PID
}

// turn is the state of one Chat being answered.
type turn struct {
	sender     *actor.PID
	iterations int
	toolCalls  int
	usage      llm.Usage
	seq        int
	cancel     context.CancelFunc

	assistant llm.Message
	results   []llm.Message
	have      []bool
	remaining int
	next      int
	running   int
	specs     map[string]*callSpec // by child actor id
}

// conversation runs the tool loop for one conversation id.
type conversation struct {
	id      string
	o       *ConvOptions
	history []llm.Message
	queue   []queued
	cur     *turn
	seq     int
}

func (c *conversation) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.SetReceiveTimeout(c.o.IdleTimeout)
	case *actor.ReceiveTimeout:
		if c.cur == nil && len(c.queue) == 0 {
			// The manager stops us, so no Chat is forwarded to a dead actor.
			ctx.Send(ctx.Parent(), &passivate{id: c.id, pid: ctx.Self()})
		}
	case *Chat:
		if c.cur != nil {
			if len(c.queue) >= c.o.QueueLen {
				ctx.Respond(&Answer{ConversationID: c.id, Err: ErrBusy})
				return
			}
			c.queue = append(c.queue, queued{chat: m, sender: ctx.Sender()})
			return
		}
		c.begin(ctx, m, ctx.Sender())
	case *llmDone:
		if c.cur == nil || m.seq != c.cur.seq {
			return
		}
		c.onLLM(ctx, m)
	case *callDone:
		c.onCall(ctx, m.index, m.result)
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

func (c *conversation) begin(ctx actor.Context, m *Chat, sender *actor.PID) {
	c.history = append(c.history, llm.Message{Role: llm.RoleUser, Content: m.Text})
	c.cur = &turn{sender: sender, specs: map[string]*callSpec{}}
	c.callLLM(ctx)
}

// tools lists what the model may call now: the tools of online agents.
func (c *conversation) tools() []llm.ToolDef {
	var defs []llm.ToolDef
	for _, a := range c.o.Edges.Catalog().Online() {
		for _, t := range a.Tools {
			params := t.Parameters
			if params == nil {
				params = map[string]any{"type": "object", "properties": map[string]any{}}
			}
			desc := t.Description
			if a.Capabilities != "" {
				desc += " (on edge agent " + a.ID + ": " + a.Capabilities + ")"
			}
			defs = append(defs, llm.ToolDef{Name: a.ID + ToolSep + t.Name, Description: desc, Parameters: params})
		}
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

func (c *conversation) callLLM(ctx actor.Context) {
	c.seq++
	t := c.cur
	t.seq = c.seq
	req := llm.Request{Model: c.o.Model, System: c.o.System, Messages: append([]llm.Message(nil), c.history...), Tools: c.tools()}
	lctx, cancel := context.WithTimeout(context.Background(), c.o.LLMTimeout)
	t.cancel = cancel
	self, root, seq, p := ctx.Self(), ctx.ActorSystem().Root, c.seq, c.o.Provider
	go func() {
		defer cancel()
		resp, err := p.Complete(lctx, req)
		if errors.Is(lctx.Err(), context.DeadlineExceeded) && err != nil {
			err = fmt.Errorf("llm %s: no answer within %s: %w", p.Name(), c.o.LLMTimeout, err)
		}
		root.Send(self, &llmDone{seq: seq, resp: resp, err: err})
	}()
}

func (c *conversation) onLLM(ctx actor.Context, m *llmDone) {
	t := c.cur
	if m.err != nil {
		c.end(ctx, "", fmt.Errorf("llm call: %w", m.err))
		return
	}
	t.usage.InputTokens += m.resp.Usage.InputTokens
	t.usage.OutputTokens += m.resp.Usage.OutputTokens
	msg := m.resp.Message
	msg.Role = llm.RoleAssistant
	if len(msg.ToolCalls) == 0 {
		c.history = append(c.history, msg)
		c.end(ctx, msg.Content, nil)
		return
	}
	if t.iterations >= c.o.MaxIterations {
		c.end(ctx, "", fmt.Errorf("%w (%d)", ErrMaxIterations, c.o.MaxIterations))
		return
	}
	t.iterations++
	t.toolCalls += len(msg.ToolCalls)
	t.assistant = msg
	n := len(msg.ToolCalls)
	t.results, t.have, t.remaining, t.next, t.running = make([]llm.Message, n), make([]bool, n), n, 0, 0
	c.spawnMore(ctx)
}

// spawnMore starts tool calls of the current turn up to MaxParallel.
func (c *conversation) spawnMore(ctx actor.Context) {
	t := c.cur
	cat := c.o.Edges.Catalog()
	for t.next < len(t.assistant.ToolCalls) && t.running < c.o.MaxParallel {
		i := t.next
		t.next++
		call := t.assistant.ToolCalls[i]
		agent, info, ok := cat.Resolve(call.Name)
		if !ok || !agent.Online {
			c.immediate(ctx, i, call, agent.ID, wire.ErrNotFound, c.unknownTool(call.Name, agent))
			continue
		}
		var args map[string]any
		if err := json.Unmarshal(call.Arguments, &args); err != nil || args == nil {
			c.immediate(ctx, i, call, agent.ID, wire.ErrInvalidParams,
				fmt.Sprintf("arguments of %q are not a JSON object: %s", call.Name, truncate(string(call.Arguments), 200)))
			continue
		}
		timeout := c.o.DefaultToolTimeout
		if info.TimeoutMS > 0 {
			timeout = time.Duration(info.TimeoutMS) * time.Millisecond
		}
		if timeout > c.o.MaxToolTimeout {
			timeout = c.o.MaxToolTimeout
		}
		s := &callSpec{index: i, convID: c.id, call: call, agentID: agent.ID, tool: info.Name,
			requestID: fmt.Sprintf("tool-%d-%d", c.o.Now().UnixNano(), requestSeq.Add(1)),
			timeout:   timeout, deadline: c.o.Now().Add(timeout + c.o.ReplySlack), edges: c.o.Edges.PID, o: c.o}
		pid := ctx.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor { return &toolCall{s: s} }), "call-")
		t.specs[pid.Id] = s
		t.running++
	}
}

func (c *conversation) unknownTool(name string, agent AgentInfo) string {
	var names []string
	for _, d := range c.tools() {
		names = append(names, d.Name)
	}
	avail := "none (no edge agent is online)"
	if len(names) > 0 {
		avail = strings.Join(names, ", ")
	}
	if agent.ID != "" && !agent.Online {
		return fmt.Sprintf("tool %q: edge agent %q is offline. Available tools: %s", name, agent.ID, avail)
	}
	return fmt.Sprintf("tool %q not found. Available tools: %s", name, avail)
}

// immediate completes a call that never reached an agent; the audit write
// runs off the mailbox like any other.
func (c *conversation) immediate(ctx actor.Context, i int, call llm.ToolCall, agentID string, et wire.ErrorType, msg string) {
	c.cur.running++
	self, root, o, convID := ctx.Self(), ctx.ActorSystem().Root, c.o, c.id
	res := wire.ToolResult{Status: wire.StatusError, Tool: call.Name, ErrorType: et, Error: msg}
	go func() {
		root.Send(self, &callDone{index: i, result: completeCall(o, convID, call, agentID, "", res)})
	}()
}

func (c *conversation) onCall(ctx actor.Context, i int, res llm.Message) {
	t := c.cur
	if t == nil || i >= len(t.have) || t.have[i] {
		return
	}
	t.have[i] = true
	t.results[i] = res
	t.remaining--
	t.running--
	if t.remaining > 0 {
		c.spawnMore(ctx)
		return
	}
	c.history = append(c.history, t.assistant)
	c.history = append(c.history, t.results...)
	t.specs = map[string]*callSpec{}
	c.callLLM(ctx)
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
		root.Send(self, &callDone{index: s.index, result: completeCall(o, s.convID, s.call, s.agentID, s.requestID, res)})
	}()
}

func (c *conversation) end(ctx actor.Context, text string, err error) {
	t := c.cur
	if t.cancel != nil {
		t.cancel()
	}
	ans := &Answer{ConversationID: c.id, Text: text, Err: err, Iterations: t.iterations, ToolCalls: t.toolCalls, Usage: t.usage}
	if t.sender != nil {
		ctx.Send(t.sender, ans)
	}
	c.cur = nil
	if len(c.queue) > 0 {
		q := c.queue[0]
		c.queue = c.queue[1:]
		c.begin(ctx, q.chat, q.sender)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
