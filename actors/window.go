package actors

import "github.com/evoclaw/evoclaw/orchestrator/llm"

// Window returns the newest part of history that fits in max bytes
// (llm.Message.Size), cut before a user message so that no exchange is
// split and no tool result loses its call. When even the part from the
// last user message on is larger, that part is kept whole: the current
// chat is never cut (its own growth is loop.Rules.MaxChatBytes'). A
// history without a user message, or within max, is returned as it is;
// a cut one is a new slice, so that the old messages can be freed.
func Window(history []llm.Message, max int) []llm.Message {
	total := historyBytes(history)
	if total <= max {
		return history
	}
	cut := -1
	for i, m := range history {
		if m.Role == llm.RoleUser && i > 0 {
			cut = i
			if total <= max {
				break
			}
		}
		total -= m.Size()
	}
	if cut <= 0 {
		return history
	}
	return append([]llm.Message(nil), history[cut:]...)
}
