package orchestrator

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Bounds of the stateless chats a node remembers (statelessChats).
const (
	// MaxStatelessChats is the most transcripts a node remembers; past
	// it the oldest is forgotten.
	MaxStatelessChats = 4096
	// StatelessChatTTL is how long a transcript is remembered after its
	// answer: a client that replays it later gets a fresh conversation.
	StatelessChatTTL = time.Hour
)

// statelessChats lets a client of /v1/chat/completions that replays the
// whole conversation on every request (as the standard clients do)
// continue the conversation the node stored, instead of starting a new
// one that stores the whole history again: a chat of n turns stored n²/2
// messages, and the audit trail split it into n conversations.
//
// After a stateless chat answers, the node remembers the transcript the
// client saw (its history, its message, the answer's text) under a hash;
// a later request whose history is exactly that transcript continues that
// conversation (its stored history, with the tool calls the client never
// saw, stands for the replayed one). A remembered transcript is taken by
// the first request that matches it: a second one with the same history
// (a regenerated answer, a retry of a failed chat) starts a fresh
// conversation from its replayed history, as does any history edited,
// cut or unknown to the node (after a restart, or past
// MaxStatelessChats / StatelessChatTTL). Any client holding the token can
// continue any conversation by name, so matching a transcript grants
// nothing more.
//
// The zero value is ready for use.
type statelessChats struct {
	mu    sync.Mutex
	byKey map[[sha256.Size]byte]*list.Element
	order list.List // of *statelessChat, oldest first
}

type statelessChat struct {
	key          [sha256.Size]byte
	conversation string
	at           time.Time
}

// transcriptKey is the hash of a transcript: each message's role and text,
// length-prefixed, in order.
func transcriptKey(msgs ...llm.Message) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, m := range msgs {
		for _, s := range []string{string(m.Role), m.Content} {
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// take returns and forgets the conversation whose transcript is key, when
// one answered within StatelessChatTTL of now.
func (s *statelessChats) take(key [sha256.Size]byte, now time.Time) (string, bool) {
	c, ok := s.takeChat(key, now)
	if !ok {
		return "", false
	}
	return c.conversation, true
}

// takeChat is take, returning the remembered transcript whole (for
// giveBack).
func (s *statelessChats) takeChat(key [sha256.Size]byte, now time.Time) (*statelessChat, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byKey[key]
	if !ok {
		return nil, false
	}
	c := e.Value.(*statelessChat)
	s.order.Remove(e)
	delete(s.byKey, key)
	if now.Sub(c.at) > StatelessChatTTL {
		return nil, false
	}
	return c, true
}

// giveBack remembers again a transcript taken for a chat that was
// refused before it started, as of when it was first remembered, unless
// another answer with the same transcript was remembered meanwhile.
func (s *statelessChats) giveBack(c *statelessChat) {
	s.mu.Lock()
	_, taken := s.byKey[c.key]
	s.mu.Unlock()
	if !taken {
		s.put(c.key, c.conversation, c.at)
	}
}

// put remembers that conversation answered with the transcript key at now,
// forgetting the oldest transcripts past MaxStatelessChats or
// StatelessChatTTL.
func (s *statelessChats) put(key [sha256.Size]byte, conversation string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[[sha256.Size]byte]*list.Element{}
	}
	if e, ok := s.byKey[key]; ok {
		s.order.Remove(e)
	}
	s.byKey[key] = s.order.PushBack(&statelessChat{key: key, conversation: conversation, at: now})
	for s.order.Len() > 0 {
		oldest := s.order.Front().Value.(*statelessChat)
		if s.order.Len() <= MaxStatelessChats && now.Sub(oldest.at) <= StatelessChatTTL {
			break
		}
		s.order.Remove(s.order.Front())
		delete(s.byKey, oldest.key)
	}
}

// len is the number of transcripts remembered.
func (s *statelessChats) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

// continued is the conversation a stateless request continues: the one
// whose answered transcript is the request's history, if the node
// remembers it. A request with no history, or that offers no tools
// (tool_choice "none" runs on this node with a toolbox of its own, which a
// clustered node allows for fresh conversations only), starts afresh.
// refused gives the transcript back for a chat refused before it started
// (busy: no chat slot, the input budget): the client's retry continues
// the conversation too, instead of storing its whole history again.
func (n *Node) continued(req completionInput) (conv string, refused func(), ok bool) {
	if len(req.Seed) == 0 || req.NoTools {
		return "", nil, false
	}
	c, ok := n.stateless.takeChat(transcriptKey(req.Seed...), n.now())
	if !ok {
		return "", nil, false
	}
	return c.conversation, func() { n.stateless.giveBack(c) }, true
}

// answeredStateless remembers the transcript a stateless request's client
// now holds: its history, its message and the answer's text as sent.
func (n *Node) answeredStateless(req completionInput, text, conversation string) {
	t := append(append(make([]llm.Message, 0, len(req.Seed)+2), req.Seed...),
		llm.Message{Role: llm.RoleUser, Content: req.Text}, llm.Message{Role: llm.RoleAssistant, Content: text})
	n.stateless.put(transcriptKey(t...), conversation, n.now())
}
