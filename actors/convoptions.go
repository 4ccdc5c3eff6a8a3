package actors

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/evoclaw/evoclaw/actors/loop"
	"github.com/evoclaw/evoclaw/edge/defaults"
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
	DefaultDormantAfter      = 2 * time.Second
	DefaultMaxDormant        = 10_000
	DefaultMaxDormantBytes   = 32 << 20
	// DefaultMaxHistoryBytes bounds the history a conversation holds and
	// sends the model (llm.Message.Size): far beyond any model's context
	// window (2 million tokens and more), and a bound on what a
	// conversation costs in memory however long it runs.
	DefaultMaxHistoryBytes = 8 << 20
	// DefaultMaxChatBytes bounds what one chat adds to the history before
	// tool use ends (loop.Rules.MaxChatBytes).
	DefaultMaxChatBytes = 4 << 20
)

// historyLoads bounds the history reads that run at once. The store reads
// on two connections; more reads than that in flight keep its queue fed,
// the rest wait in the loads' queue, without a goroutine each (4 at once
// cost a third of the conversations/s of evoclaw load, 32 none).
const historyLoads = 32

// What a conversation does when the loop hits a limit (max iterations,
// consecutive failing turns, a repeated identical call): see package loop.
const (
	OnLimitAnswer = loop.OnLimitAnswer
	OnLimitError  = loop.OnLimitError
)

// Errors that end a Chat, alone or (limits under OnLimitAnswer) beside an
// answer. The loop's own are those of package loop.
var (
	ErrMaxIterations    = loop.ErrMaxIterations
	ErrToolErrorLimit   = loop.ErrToolErrorLimit
	ErrRepeatedToolCall = loop.ErrRepeatedToolCall
	ErrChatTooLarge     = loop.ErrChatTooLarge
	ErrCanceled         = loop.ErrCanceled
	ErrAudit            = loop.ErrAudit
	ErrBusy             = errors.New("conversation has too many queued messages")
	ErrStopped          = errors.New("conversation stopped before it answered")
	ErrHistory          = errors.New("conversation history")
	// ErrLLM wraps a failed completion (an *llm.Error inside says why).
	ErrLLM = errors.New("llm call failed")
	// ErrSeeded refuses a Chat with a Seed for a conversation that already
	// has history.
	ErrSeeded = errors.New("conversation already has history; a seeded chat needs a new conversation id")
)

// ErrRepeatedCall is the error type of a tool call refused because the
// same tool with the same arguments already ran in this chat.
const ErrRepeatedCall wire.ErrorType = "repeated_call"

// ErrTooManyCalls is the error type of a tool call past MaxCallsPerTurn
// in one assistant turn: refused, not run.
const ErrTooManyCalls wire.ErrorType = "too_many_calls"

// MaxCallsPerTurn bounds the tool calls one assistant turn runs; the
// calls after it are answered ErrTooManyCalls. A model output can hold
// thousands of calls, each a run and an audit row.
const MaxCallsPerTurn = 64

// MaxArgsBytes bounds a tool call's arguments (JSON): larger ones are
// refused as invalid_params, and the audit row keeps their size and
// SHA-256 instead of the bytes (OmittedParams).
const MaxArgsBytes = 256 << 10

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
	// Approvals, when set, gates every tool call: a call it names waits
	// for a person's decision before it runs (approval.go).
	Approvals Approver
	Audit     AuditLog
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
	// RequestTag, when set, goes into the request_id of every command the
	// conversations send (RequestID): a clustered node tags its own, so
	// that it ignores the reports answering the other nodes' commands.
	RequestTag string
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
	// DormantAfter is how long a conversation waits idle, nothing queued,
	// before it gives up its actor (mailbox, timer, registry entry, the
	// actors of its last tool calls): the manager keeps its history,
	// compacted, until IdleTimeout, and its next chat starts an actor with
	// that history instead of reading the store (default 2 s; negative,
	// or not below IdleTimeout: the actor stays until IdleTimeout).
	DormantAfter time.Duration
	// MaxDormant bounds the dormant conversations the manager keeps
	// (default 10,000); past it an idle conversation passivates fully and
	// its next chat reads its history from the store.
	MaxDormant int
	// MaxDormantBytes bounds the history the dormant conversations hold
	// in memory, images included (default 32 MiB); past it an idle
	// conversation passivates fully.
	MaxDormantBytes int
	// MaxHistoryBytes bounds the history a conversation keeps in memory
	// and sends the model (default DefaultMaxHistoryBytes): before each
	// completion the oldest exchanges are left out, whole, from a user
	// message on, so that the rest fits; the current chat is never cut.
	// The store keeps every message.
	MaxHistoryBytes int
	// MaxChatBytes bounds what one chat adds to the history, the model's
	// messages and the tool results (default DefaultMaxChatBytes): after
	// the turn that passes it, OnLimit applies.
	MaxChatBytes int
	Now          func() time.Time
	Logger       *slog.Logger

	// fault, when set by tests, runs at the start of every tool-call attempt.
	fault func(call llm.ToolCall, attempt int)
	// chatFault, when set by tests, runs as a conversation takes a chat.
	chatFault func(*Chat)
	// loads runs the conversations' history reads, historyLoads at a time.
	loads *limited
	// started, when set by tests, sees every conversation actor made.
	started func(*conversation)
	schemas *schemaCache
	offers  *offers
}

func (o *ConvOptions) fill() {
	defaults.Positive(&o.MaxIterations, DefaultMaxIterations)
	defaults.Positive(&o.ToolErrorLimit, DefaultToolErrorLimit)
	defaults.Positive(&o.MaxIdenticalCalls, DefaultMaxIdenticalCalls)
	defaults.Positive(&o.MaxParallel, DefaultMaxParallel)
	defaults.Positive(&o.CallRetries, DefaultCallRetries)
	defaults.Positive(&o.QueueLen, DefaultQueueLen)
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
	defaults.Positive(&o.ReplySlack, DefaultReplySlack)
	defaults.Positive(&o.CallRetryWindow, DefaultCallRetryWindow)
	defaults.Positive(&o.LLMTimeout, DefaultLLMTimeout)
	defaults.Positive(&o.AuditTimeout, DefaultAuditTimeout)
	defaults.Positive(&o.IdleTimeout, DefaultIdleTimeout)
	if o.DormantAfter == 0 {
		o.DormantAfter = DefaultDormantAfter
	}
	defaults.Positive(&o.MaxDormant, DefaultMaxDormant)
	defaults.Positive(&o.MaxDormantBytes, DefaultMaxDormantBytes)
	defaults.Positive(&o.MaxHistoryBytes, DefaultMaxHistoryBytes)
	defaults.Positive(&o.MaxChatBytes, DefaultMaxChatBytes)
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
	o.offers = &offers{}
	o.loads = newLimited(historyLoads)
}

// dormancy tells whether idle conversations go dormant, and after how
// long without a message a conversation actor acts on being idle.
func (o *ConvOptions) dormancy() (dormant bool, idle time.Duration) {
	if o.DormantAfter > 0 && o.DormantAfter < o.IdleTimeout {
		return true, o.DormantAfter
	}
	return false, o.IdleTimeout
}

// rules are the loop's limits of a chat; maxIter, when positive and lower,
// replaces MaxIterations (a sub-agent's budget).
func (o *ConvOptions) rules(maxIter int) loop.Rules {
	if maxIter <= 0 || maxIter > o.MaxIterations {
		maxIter = o.MaxIterations
	}
	return loop.Rules{MaxIterations: maxIter, ToolErrorLimit: o.ToolErrorLimit,
		MaxIdenticalCalls: o.MaxIdenticalCalls, MaxParallel: o.MaxParallel, OnLimit: o.OnLimit, MaxChatBytes: o.MaxChatBytes}
}
