package actors

import (
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/actors/loop"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// MQTT traffic routed to the edge registry. The orchestrator decodes each
// message and sends one of these; the registry forwards it to the agent's
// actor, creating it on first sight.
type (
	// ReportIn is a decoded report from an agent.
	ReportIn struct {
		AgentID string
		Report  wire.Report
	}
	// StatusIn is a decoded status message.
	StatusIn struct {
		AgentID string
		Status  wire.Status
	}
	// CapabilitiesIn is a decoded capabilities message.
	CapabilitiesIn struct {
		AgentID      string
		Capabilities string
	}
)

// Dispatch asks an edge actor to send a command and route the reply
// (a *Reply or a *DispatchFailed) to ReplyTo.
type Dispatch struct {
	AgentID  string
	Command  wire.Command
	ReplyTo  *actor.PID
	Deadline time.Time
	// Gated: the command asks for the start gate (wire.ToolPayload.StartGate);
	// the edge actor sends the start when the agent accepts it.
	Gated bool
	// Started: the agent may already have been told to run the command
	// (it was placed on another node before, in a cluster), so it is never
	// reported movable.
	Started bool
	// Placed: a cluster's call router placed it on this node (the node
	// holding the agent's calls); the registry hands it to the agent's
	// actor. Unset, a clustered registry sends it to the router first.
	Placed bool
}

// Reply carries the report answering a dispatched command.
type Reply struct {
	RequestID string
	Report    wire.Report
}

// DispatchFailed says a command could not be delivered or was abandoned.
// Transient failures (the publish failed) may be retried with the same
// request_id; the agent deduplicates.
type DispatchFailed struct {
	RequestID string
	Type      wire.ErrorType
	Err       string
	Transient bool
	// Movable: the command is known not to run on this agent (it was never
	// sent, or it was gated and never told to start), so a group call may
	// send it to another member.
	Movable bool
}

// CancelDispatch tells an edge actor to forget a pending request.
type CancelDispatch struct {
	AgentID   string
	RequestID string
	// Placed: as Dispatch.Placed.
	Placed bool
}

// PlaceCalls makes a clustered node's edge registry send every Dispatch
// and CancelDispatch not yet Placed to Router, which places each on the
// node holding the agent's calls (docs/CLUSTER.md, "Agents").
type PlaceCalls struct {
	Router *actor.PID
}

// Chat is a user message to a conversation; the conversation answers the
// sender with *Answer.
type Chat struct {
	ConversationID string
	Text           string
	// RequestID is the wire request that started this chat (an edge
	// agent's prompt command), if any; local tool runs are audited under it.
	RequestID string
	// System, when set, replaces ConvOptions.System for this chat.
	System string
	// MaxTokens, when positive, bounds each completion of this chat.
	MaxTokens int
	// Sampling are the sampling hints of each completion of this chat.
	Sampling llm.Sampling
	// Seed is the history this chat continues from when the conversation
	// has none yet (a stateless client sends the whole exchange every
	// time). It is stored like any other step; a conversation that already
	// has history refuses a seeded chat with ErrSeeded.
	Seed []llm.Message
	// Fresh says the caller made ConversationID for this chat a moment
	// ago, from enough random bits that nothing can be stored under it:
	// the conversation starts with no history instead of reading the
	// store. Only ids the node made itself may set it; a chat for a
	// conversation that already has an actor ignores it.
	Fresh bool
	// Progress, when set, receives the chat's steps as they happen.
	Progress ProgressFunc
	// Toolbox, when set, replaces ConvOptions.Toolbox for this chat (a
	// scheduled job's Filter). The approval gate applies all the same.
	Toolbox Toolbox
	// Person is true when a person reads this chat live and can answer a
	// question tool (the chat API's stream, the terminal client).
	Person bool
	// MaxIterations, when positive and below ConvOptions.MaxIterations,
	// bounds this chat's tool turns (a sub-agent's budget).
	MaxIterations int
	// Parent is the conversation that spawned this one (a sub-agent), and
	// Depth how many spawns deep it is (0: not spawned).
	Parent string
	Depth  int
	// Spawns, when set, is what the tree of sub-agents this chat belongs
	// to may still start, shared by every chat of the tree.
	Spawns *SpawnBudget
	// Wait, when set, learns whether and when the chat left its
	// conversation's queue.
	Wait *QueueWait
}

// SpawnBudget counts the chats a person's message may still start through
// sub-agents and sends, across the whole tree they make: depth and
// children bound how deep and how wide it runs at once, this how many in
// all. A nil budget allows every start.
type SpawnBudget struct{ left atomic.Int64 }

// NewSpawnBudget returns a budget of n starts.
func NewSpawnBudget(n int) *SpawnBudget {
	b := &SpawnBudget{}
	b.left.Store(int64(n))
	return b
}

// Take uses one start, and reports false when none is left.
func (b *SpawnBudget) Take() bool {
	return b == nil || b.left.Add(-1) >= 0
}

// Share gives up half of what is left (rounded down) and returns it: the
// budget of a part of the tree that runs on another node, which cannot
// share this counter. What the two parts may start together stays within
// the budget; what the other part leaves unused is not given back. ok is
// false for a nil budget, which allows every start.
func (b *SpawnBudget) Share() (n int64, ok bool) {
	if b == nil {
		return 0, false
	}
	for {
		left := b.left.Load()
		give := max(left, 0) / 2
		if b.left.CompareAndSwap(left, left-give) {
			return give, true
		}
	}
}

// Left is what the budget may still start (negative after refused takes).
func (b *SpawnBudget) Left() int64 { return b.left.Load() }

// Cancel abandons the chat a conversation is answering: its sender gets an
// Answer with ErrCanceled.
type Cancel struct {
	ConversationID string
	// Chat, when set, names the one chat to abandon (the pointer sent): it
	// is dropped from the queue if it waits, abandoned if it runs, and
	// nothing happens if it already ended. Without it, whatever chat runs
	// is abandoned.
	Chat *Chat
}

// Answer is the final result of a Chat.
type Answer struct {
	ConversationID string
	Text           string
	// Err is set when the loop ended without an answer.
	Err        error
	Iterations int
	ToolCalls  int
	Usage      llm.Usage
	// Limit names the loop limit that ended tool use early ("" when the
	// model answered on its own); see ConvOptions.OnLimit.
	Limit string
	// FinishReason is why the model ended the completion that gave Text
	// (llm.FinishLength when the server cut it at max_tokens, or the
	// server's own value); "" when the server said nothing.
	FinishReason string
	// Calls summarises the tool calls of this chat, turn by turn in call order.
	Calls []CallSummary
}

// CallSummary is one tool call of a chat, for reports such as a prompt
// result's tools_executed.
type CallSummary = loop.CallSummary

// internal messages
type (
	tick          struct{}
	publishResult struct {
		requestID string
		err       error
	}
	llmDone struct {
		seq  int
		resp llm.Response
		err  error
	}
	callDone struct {
		gen    int // the turn the call belongs to
		index  int
		res    skills.Output
		result llm.Message
		// audit is the error of the call's audit write, if any.
		audit error
		// pending, when set, gives the result of an audit write that was
		// queued, not waited for (ToolCallQueue); audit is then nil.
		pending <-chan error
	}
	localDone struct {
		res skills.Output
	}
	historyLoaded struct {
		msgs []llm.Message
		err  error
	}
	finished struct {
		turn *turn // the turn it ends
		ans  *Answer
	}
	// approvalDone is the decision on a call that waited for approval.
	approvalDone struct {
		gen      int
		index    int
		decision ApprovalDecision
		// The call as it waited, to audit it when its turn is gone.
		call               llm.ToolCall
		agentID, requestID string
	}
	callTimeout   struct{}
	callRedeliver struct{}
)

// summaryBytes bounds the result or error kept in a CallSummary.
const summaryBytes = 512

// truncate cuts s to at most n bytes, back to the start of a character so
// that no character is cut in half, and marks the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
