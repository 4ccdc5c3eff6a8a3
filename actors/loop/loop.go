// Package loop holds the rules of the tool loop as a plain state machine:
// how many turns a chat may take, which calls are refused as repeats, how
// many run at once, when failing turns end the chat and what a limit does.
// It runs nothing and stores nothing. Its driver (the conversation actor)
// feeds it what happened (the model answered, a call ended) and carries out
// the effects it returns, in order.
//
// One Machine answers one chat:
//
//	Start                   → AskModel
//	ModelAnswered(no calls) → Record, Finish
//	ModelAnswered(calls)    → RunCall for the first MaxParallel calls
//	CallEnded(i)            → RunCall for the next call, or, after the last:
//	                          BatchEnded, Record, then AskModel or Finish
//	ModelFailed, Cancel     → Finish
//
// # Concurrency
//
// A Machine is not safe for concurrent use; its driver owns it.
package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// What a chat does when it hits a limit (max iterations, consecutive
// failing turns, a repeated identical call).
const (
	// OnLimitAnswer asks the model once more, offering no tools, for a
	// final answer from what it has; the Finish names the limit.
	OnLimitAnswer = "answer"
	// OnLimitError ends the chat with an error naming the limit.
	OnLimitError = "error"
)

// Errors a Finish carries, alone or (limits under OnLimitAnswer) beside an
// answer.
var (
	ErrMaxIterations    = errors.New("max tool iterations reached without a final answer")
	ErrToolErrorLimit   = errors.New("too many consecutive turns in which every tool call failed")
	ErrRepeatedToolCall = errors.New("the model kept repeating an identical tool call")
	// ErrChatTooLarge: the chat's model messages and tool results passed
	// Rules.MaxChatBytes.
	ErrChatTooLarge = errors.New("this request's messages and tool results passed their size bound")
	ErrCanceled     = errors.New("chat canceled")
	// ErrAudit ends a chat whose tool call could not be recorded: an
	// answer that the audit trail does not back is not given.
	ErrAudit = errors.New("audit trail cannot record")
)

// Rules are the limits of one chat. Zero values are not defaults: the
// driver fills them in.
type Rules struct {
	// MaxIterations bounds model turns that request tools.
	MaxIterations int
	// ToolErrorLimit ends tool use after this many consecutive turns in
	// which every call failed.
	ToolErrorLimit int
	// MaxIdenticalCalls is how often one tool may run with the same
	// arguments in one chat. One more is refused with a warning to the
	// model; another after the warning ends tool use.
	MaxIdenticalCalls int
	// MaxParallel bounds calls of one turn running at once.
	MaxParallel int
	// OnLimit is OnLimitAnswer or OnLimitError.
	OnLimit string
	// MaxChatBytes bounds what the chat adds to the history (the model's
	// messages and the tool results, llm.Message.Size): a result that
	// ends after it was passed is replaced by a short notice, and after
	// the turn that passed it, tool use ends. 0: no bound.
	MaxChatBytes int
}

// Effect is what the driver must do next.
type Effect interface{ effect() }

// AskModel requests a completion over the history. Tools is false for the
// final call after a limit, which offers none; Limit is that limit.
type AskModel struct {
	Tools bool
	Limit error
}

// RunCall runs call Index of the last assistant message. When Refusal is
// set the call must not run: its result is that error text, of type
// "repeated_call".
type RunCall struct {
	Index   int
	Refusal string
}

// Record appends Messages to the conversation's history.
type Record struct {
	Messages []llm.Message
}

// BatchEnded reports a finished turn of tool calls, for metrics: how many
// ran, the most at once, and the sum of their own elapsed times.
type BatchEnded struct {
	Calls, Peak int
	SumElapsed  time.Duration
}

// Finish ends the chat with Text, or with Err. Limit names the limit that
// ended tool use early, if one did.
type Finish struct {
	Text  string
	Err   error
	Limit error
}

func (AskModel) effect()   {}
func (RunCall) effect()    {}
func (Record) effect()     {}
func (BatchEnded) effect() {}
func (Finish) effect()     {}

// CallSummary is one tool call of a chat, for reports such as a prompt
// result's tools_executed.
type CallSummary struct {
	Tool    string `json:"tool"`
	Success bool   `json:"success"`
	Result  string `json:"result,omitempty"` // the start of the result on success
	Error   string `json:"error,omitempty"`  // the start of the error on failure
}

// CallResult is how one call ended, as the driver tells the Machine.
type CallResult struct {
	// Message is the tool message the model will see.
	Message llm.Message
	Failed  bool
	Summary CallSummary
	// Elapsed is the call's own time, from its start to its end.
	Elapsed time.Duration
	// AuditErr is the error of the call's audit write, if any.
	AuditErr error
}

// Machine is the state of one chat's tool loop.
type Machine struct {
	rules      Rules
	iterations int // model turns that requested tools
	toolCalls  int
	// seen counts identical calls (Signature) in this chat; warned marks
	// those the model was already told not to repeat.
	seen      map[string]int
	warned    map[string]bool
	errTurns  int   // consecutive turns in which every call failed
	added     int   // bytes the chat's turns added to the history (MaxChatBytes)
	limit     error // set once a limit is hit: the final, tool-less call runs
	stopAfter bool  // the model repeated a call it was warned about: end after this turn
	auditErr  error
	executed  []CallSummary
	batch     *batch
	finished  bool
}

// batch is the current turn's tool calls.
type batch struct {
	assistant  llm.Message
	refusals   []string
	results    []llm.Message
	summaries  []CallSummary
	failed     []bool
	have       []bool
	next       int // the next call to start
	running    int
	remaining  int
	peak       int
	sumElapsed time.Duration
}

// New returns the machine of one chat under r.
func New(r Rules) *Machine {
	return &Machine{rules: r, seen: map[string]int{}, warned: map[string]bool{}}
}

// Iterations is the number of model turns that requested tools.
func (m *Machine) Iterations() int { return m.iterations }

// ToolCalls is the number of tool calls the model asked for.
func (m *Machine) ToolCalls() int { return m.toolCalls }

// Calls summarises the calls that ended, turn by turn in call order.
func (m *Machine) Calls() []CallSummary { return m.executed }

// Limit is the limit that ended tool use, or nil.
func (m *Machine) Limit() error { return m.limit }

// Awaiting reports whether call i of the current turn was started and has
// not ended: a result for any other call is stale.
func (m *Machine) Awaiting(i int) bool {
	b := m.batch
	return !m.finished && b != nil && i >= 0 && i < b.next && !b.have[i]
}

// Start begins the chat: the user's message is in the history.
func (m *Machine) Start() []Effect { return []Effect{AskModel{Tools: true}} }

// ModelFailed ends the chat with the completion's error; after the chat
// ended (a canceled call's completion fails late) it does nothing.
func (m *Machine) ModelFailed(err error) []Effect {
	if m.finished {
		return nil
	}
	return m.finish("", err)
}

// Cancel ends the chat with ErrCanceled; calls still running are the
// driver's to stop.
func (m *Machine) Cancel() []Effect {
	if m.finished {
		return nil
	}
	m.batch = nil
	return m.finish("", ErrCanceled)
}

// ModelAnswered takes the model's message: a final answer, or tool calls
// to run.
func (m *Machine) ModelAnswered(msg llm.Message) []Effect {
	if m.finished || m.batch != nil {
		return nil
	}
	msg.Role = llm.RoleAssistant
	if m.limit != nil {
		// The tool-less final call: whatever tools it still asks for are
		// not run.
		msg.ToolCalls = nil
		if strings.TrimSpace(msg.Content) == "" {
			return m.finish("", m.limit)
		}
		return append([]Effect{Record{Messages: []llm.Message{msg}}}, m.finish(msg.Content, nil)...)
	}
	if len(msg.ToolCalls) == 0 {
		return append([]Effect{Record{Messages: []llm.Message{msg}}}, m.finish(msg.Content, nil)...)
	}
	if m.iterations >= m.rules.MaxIterations {
		return m.hitLimit(fmt.Errorf("%w (%d)", ErrMaxIterations, m.rules.MaxIterations))
	}
	m.iterations++
	m.added += msg.Size()
	n := len(msg.ToolCalls)
	m.toolCalls += n
	b := &batch{assistant: msg, refusals: make([]string, n), results: make([]llm.Message, n),
		summaries: make([]CallSummary, n), failed: make([]bool, n), have: make([]bool, n), remaining: n}
	stop := false
	for i, call := range msg.ToolCalls {
		sig := Signature(call.Name, call.Arguments)
		m.seen[sig]++
		if m.seen[sig] <= m.rules.MaxIdenticalCalls {
			continue
		}
		if m.warned[sig] {
			stop = true
		}
		m.warned[sig] = true
		b.refusals[i] = fmt.Sprintf("%s was already called with these exact arguments in this request; its result is above. "+
			"Do not call it again with the same arguments: use that result, try something different, or answer the user.", call.Name)
	}
	// The model was told and repeated the call anyway: the turn's results
	// are kept, and tool use ends after it.
	m.stopAfter = stop
	m.batch = b
	return m.startMore()
}

// CallEnded takes the result of call i of the current turn. Results of
// calls that are not running (a finished chat, a repeat) are ignored.
func (m *Machine) CallEnded(i int, r CallResult) []Effect {
	if !m.Awaiting(i) {
		return nil
	}
	b := m.batch
	b.have[i] = true
	msg := r.Message
	if m.rules.MaxChatBytes > 0 && m.added >= m.rules.MaxChatBytes {
		// One turn's results alone could be 64 images of 4 MiB: past
		// the bound the model gets a notice instead.
		msg = leftOut(msg, m.rules.MaxChatBytes)
	}
	b.results[i] = msg
	m.added += msg.Size()
	b.failed[i] = r.Failed
	b.summaries[i] = r.Summary
	b.remaining--
	b.running--
	b.sumElapsed += r.Elapsed
	if r.AuditErr != nil && m.auditErr == nil {
		m.auditErr = r.AuditErr
	}
	if b.remaining > 0 {
		return m.startMore()
	}
	m.batch = nil
	m.executed = append(m.executed, b.summaries...) // in call order
	effects := []Effect{
		BatchEnded{Calls: len(b.results), Peak: b.peak, SumElapsed: b.sumElapsed},
		Record{Messages: append([]llm.Message{b.assistant}, b.results...)},
	}
	allFailed := true
	for _, f := range b.failed {
		allFailed = allFailed && f
	}
	if allFailed {
		m.errTurns++
	} else {
		m.errTurns = 0
	}
	switch {
	case m.auditErr != nil:
		// Nothing more runs, and no answer is given, without a record.
		return append(effects, m.finish("", fmt.Errorf("%w: %w", ErrAudit, m.auditErr))...)
	case m.stopAfter:
		return append(effects, m.hitLimit(ErrRepeatedToolCall)...)
	case m.rules.MaxChatBytes > 0 && m.added >= m.rules.MaxChatBytes:
		return append(effects, m.hitLimit(fmt.Errorf("%w (%d bytes)", ErrChatTooLarge, m.rules.MaxChatBytes))...)
	case m.errTurns >= m.rules.ToolErrorLimit:
		return append(effects, m.hitLimit(fmt.Errorf("%w (%d)", ErrToolErrorLimit, m.rules.ToolErrorLimit))...)
	}
	return append(effects, AskModel{Tools: true})
}

// leftOut is what the model sees of a result that came after its chat
// passed max bytes: the call ran (and is audited), its result is not kept.
func leftOut(msg llm.Message, max int) llm.Message {
	return llm.Message{Role: msg.Role, ToolCallID: msg.ToolCallID, Name: msg.Name, IsError: msg.IsError,
		Content: fmt.Sprintf("[result left out: this request's messages and tool results passed %d bytes before it came; the call ran. Ask for less at a time.]", max)}
}

// startMore starts calls of the current turn up to MaxParallel running.
func (m *Machine) startMore() []Effect {
	b := m.batch
	var effects []Effect
	for b.next < len(b.have) && b.running < max(m.rules.MaxParallel, 1) {
		i := b.next
		b.next++
		b.running++
		b.peak = max(b.peak, b.running)
		effects = append(effects, RunCall{Index: i, Refusal: b.refusals[i]})
	}
	return effects
}

// hitLimit applies OnLimit: an error, or one last call offering no tools.
func (m *Machine) hitLimit(why error) []Effect {
	if m.rules.OnLimit == OnLimitError {
		return m.finish("", why)
	}
	m.limit = why
	return []Effect{AskModel{Tools: false, Limit: why}}
}

func (m *Machine) finish(text string, err error) []Effect {
	m.finished = true
	return []Effect{Finish{Text: text, Err: err, Limit: m.limit}}
}

// Signature identifies a call by tool name and canonical arguments, so
// that the same object written with other spacing or key order is the
// same call.
func Signature(name string, args json.RawMessage) string {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return name + "\x00" + string(args)
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return name + "\x00" + string(args)
	}
	return name + "\x00" + string(canon)
}
