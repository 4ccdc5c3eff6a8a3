package orchestrator

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// Defaults and bounds of [loop] chat_input_mb_per_hour and
// chat_input_burst_mb (inputBudget).
const (
	// DefaultChatInputMBPerHour is the input, in MiB, that API clients'
	// chats may bring a node per hour, sustained.
	DefaultChatInputMBPerHour = 128
	// DefaultChatInputBurstMB is the input, in MiB, they may bring at
	// once: 8 chats of the largest body /v1/chat/completions takes.
	DefaultChatInputBurstMB = 32
	// minChatInputBurstMB is the smallest burst allowed: the largest chat
	// (4 MiB of input) fits in it beside the share kept for small chats.
	minChatInputBurstMB = 8
	// chatInputReserve is the share of the burst that chats of more than
	// smallBody bytes of input leave to the small ones.
	chatInputReserve = 8
	// chatRecordBytes is what a chat takes of the budget besides its
	// input and its client's fields (chatCost): about what the trail
	// stores for any chat, its rows, hashes and chat_received event (a
	// one-byte chat grew audit.db by some 2 KB).
	chatRecordBytes = 1 << 10
)

// inputBudget bounds the bytes that chats of API clients bring a node (as
// chatInputBytes counts them: text, system prompt, seeded history): every
// one of them is written to the audit database before the model answers,
// and stays there when the client hangs up. A client replaying a 3.4 MB
// history that was new to the node and hanging up after 0.5 s grew a
// node's audit.db by 286 MB in 10 s. Each chat takes chatCost more, what
// its records cost whatever its input. It is a token bucket of bytes: full
// at start, holding at most burst, gaining perSec a second. A chat takes
// its bytes before anything of it is stored, or is refused (429); a chat
// of more than smallBody bytes must leave burst/chatInputReserve in the
// bucket, so that a flood of large histories does not refuse people's
// short messages. A client continuing a conversation the node answered
// (stateless.go) brings its new message only.
//
// A nil *inputBudget takes every chat.
type inputBudget struct {
	mbPerHour     int
	perSec, burst float64
	// mu guards the fields below.
	mu     sync.Mutex
	tokens float64
	last   time.Time
	// taken counts the bytes chats took since start; refused the chats
	// refused, the last at lastRefused, which had to wait lastWait.
	taken, refused int64
	lastRefused    time.Time
	lastWait       time.Duration
}

// ChatInputStatus is the node's budget of API clients' chat input
// ([loop] chat_input_mb_per_hour and chat_input_burst_mb) in Status.
type ChatInputStatus struct {
	MBPerHour  int   `json:"mb_per_hour"`
	BurstBytes int64 `json:"burst_bytes"`
	// AvailableBytes is the input chats may bring now; a chat of more
	// than 64 KiB must leave ReservedBytes of it to short ones.
	AvailableBytes int64 `json:"available_bytes"`
	ReservedBytes  int64 `json:"reserved_bytes"`
	// TakenBytes is what chats took of it since the node started.
	TakenBytes int64 `json:"taken_bytes"`
	// Refused counts the chats refused for it since start (429); the
	// last one at LastRefused, told to retry in LastRetryAfterS seconds.
	Refused         int64     `json:"refused"`
	LastRefused     time.Time `json:"last_refused,omitzero"`
	LastRetryAfterS int64     `json:"last_retry_after_s,omitempty"`
}

// status is the budget at now; nil for no budget.
func (b *inputBudget) status(now time.Time) *ChatInputStatus {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	s := &ChatInputStatus{MBPerHour: b.mbPerHour, BurstBytes: int64(b.burst), AvailableBytes: int64(b.tokens),
		ReservedBytes: int64(b.burst / chatInputReserve), TakenBytes: b.taken, Refused: b.refused, LastRefused: b.lastRefused}
	if b.refused > 0 {
		s.LastRetryAfterS = int64(retryAfter(b.lastWait) / time.Second)
	}
	return s
}

// refill adds what the budget gained since it was last looked at, up to
// burst; b.mu is held.
func (b *inputBudget) refill(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.perSec)
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
}

// newInputBudget is the budget of [loop] chat_input_mb_per_hour and
// chat_input_burst_mb (zero: their defaults), nil when mbPerHour is
// negative (no bound).
func newInputBudget(mbPerHour, burstMB int) *inputBudget {
	if mbPerHour < 0 {
		return nil
	}
	if mbPerHour == 0 {
		mbPerHour = DefaultChatInputMBPerHour
	}
	if burstMB <= 0 {
		burstMB = DefaultChatInputBurstMB
	}
	burst := float64(burstMB) * (1 << 20)
	return &inputBudget{mbPerHour: mbPerHour, perSec: float64(mbPerHour) * (1 << 20) / 3600, burst: burst, tokens: burst}
}

// take takes size bytes of the budget at now, or takes none and says how
// long until they are there.
func (b *inputBudget) take(now time.Time, size int64) (time.Duration, bool) {
	return b.takeChat(now, size, 0)
}

// takeChat is take for a chat of size bytes of input whose records take
// records bytes more: whether it is a large chat, which must leave the
// small ones their share, is a matter of its input.
func (b *inputBudget) takeChat(now time.Time, size, records int64) (time.Duration, bool) {
	if b == nil {
		return 0, true
	}
	large := size > smallBody
	size += records
	need := float64(size)
	if large {
		need = min(need+b.burst/chatInputReserve, b.burst)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens < need {
		wait := time.Duration((need - b.tokens) / b.perSec * float64(time.Second))
		b.refused++
		b.lastRefused, b.lastWait = now, wait
		return wait, false
	}
	took := min(float64(size), b.tokens)
	b.tokens -= took
	b.taken += int64(took)
	return 0, true
}

// inputRateError refuses a chat whose input the node's inputBudget has no
// room for now. It is busy (ErrTooManyChats, 429): RetryAfter says when
// the budget has room again for this chat, if no other takes it first.
type inputRateError struct {
	size       int64
	retryAfter time.Duration
	perHour    int
}

func (e *inputRateError) Error() string {
	return fmt.Sprintf("busy: chats of API clients brought this node more input than it stores ([loop] chat_input_mb_per_hour = %d MiB, with a burst); this chat's %d bytes have room in %s: retry then, or continue the conversation by its id instead of sending its history again",
		e.perHour, e.size, e.RetryAfter())
}

func (e *inputRateError) Unwrap() error { return ErrTooManyChats }

// RetryAfter is the wait before a retry, in whole seconds (at least 1).
func (e *inputRateError) RetryAfter() time.Duration { return retryAfter(e.retryAfter) }

// retryAfter is wait in whole seconds, rounded up, at least 1.
func retryAfter(wait time.Duration) time.Duration {
	return time.Duration(max(1, math.Ceil(wait.Seconds()))) * time.Second
}

// takeChatInput takes in's input of the node's budget, with what any chat
// costs the trail (chatCost), or refuses it with an *inputRateError. Only
// chats that API clients send count: the node's own (jobs, sub-agents,
// sends) are bounded by their configuration.
func (n *Node) takeChatInput(in ChatInput) error {
	if in.Client == nil {
		return nil
	}
	size, records := chatInputBytes(in), chatCost(in.Client)
	if wait, ok := n.chatInput.takeChat(n.now(), size, records); !ok {
		return &inputRateError{size: size + records, retryAfter: wait, perHour: n.chatInput.mbPerHour}
	}
	return nil
}

// chatCost is what a chat of client c stores whatever its input:
// chatRecordBytes and c's fields, which its chat_received event holds.
// Counting the input alone, a client sending one-byte chats as fast as the
// node answered them grew audit.db by megabytes a second and took
// nothing of the budget.
func chatCost(c *ChatClient) int64 {
	return int64(chatRecordBytes + len(c.Endpoint) + len(c.Address) + len(c.ForwardedFor) + len(c.UserAgent) + len(c.Node))
}

// retryAfterSeconds is the Retry-After of a chat refused with err (429):
// when its input has room again on the node that refused it (this one, or
// the one owning its conversation in a cluster), else 1 s.
func retryAfterSeconds(err error) string {
	var ie *inputRateError
	var re *RemoteChatError
	switch {
	case errors.As(err, &ie):
		return strconv.Itoa(int(ie.RetryAfter() / time.Second))
	case errors.As(err, &re) && re.RetryAfterS > 0:
		return strconv.FormatInt(re.RetryAfterS, 10)
	}
	return "1"
}

// remoteRetryAfter is the RetryAfterS of a chat refused with err, to send
// to the node that forwarded it: 0 unless its input had no room here.
func remoteRetryAfter(err error) int64 {
	var ie *inputRateError
	if errors.As(err, &ie) {
		return int64(ie.RetryAfter() / time.Second)
	}
	return 0
}
