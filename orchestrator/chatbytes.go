package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxRunningChatBytes bounds the input the chats a node runs at once
// brought with them (their text, system prompt and seeded history, as
// chatInputBytes counts it). A running chat holds several times its input
// (its history, each completion's request, the stored messages): 40 chats
// of 4 MiB held 290 to 780 MB of a node, within [loop] max_running_chats.
// A chat whose input finds the bound taken waits for it as for a chat
// slot, then is refused as one (ErrTooManyChats: 429, Retry-After).
const MaxRunningChatBytes = 32 << 20

// chatInputBytes is what a chat brings: its text and system prompt, and
// the messages, parts and tool calls of the history it seeds.
func chatInputBytes(in ChatInput) int64 {
	n := len(in.Text) + len(in.System)
	for _, m := range in.Seed {
		n += len(m.Content)
		for _, p := range m.Parts {
			n += len(p.Text) + len(p.Data)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Arguments) + len(c.Name)
		}
	}
	return int64(n)
}

// takeChatBytes takes a chat's input bytes of MaxRunningChatBytes,
// waiting up to timeout or until ctx ends, and returns how long it waited
// and what gives them back. A chat under smallBody bytes takes none: the
// bound is for the large ones, and max_running_chats already counts the
// rest.
func (n *Node) takeChatBytes(ctx context.Context, in ChatInput, timeout time.Duration) (time.Duration, func(), error) {
	size := chatInputBytes(in)
	if size <= smallBody {
		return 0, func() {}, nil
	}
	size = min(size, MaxRunningChatBytes)
	if n.chatBytes.TryAcquire(size) {
		return 0, func() { n.chatBytes.Release(size) }, nil
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := n.chatBytes.Acquire(wctx, size); err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, nil, fmt.Errorf("waiting for running chats to end: %w", ctx.Err())
		}
		return 0, nil, fmt.Errorf("%w: their input holds the node's %d MiB for it, and none ended within %s to free this chat's %d bytes",
			ErrTooManyChats, MaxRunningChatBytes>>20, timeout.Round(time.Millisecond), size)
	}
	return time.Since(start), func() { n.chatBytes.Release(size) }, nil
}
