package orchestrator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestReplayedHistoryContinuesItsConversation: a client that replays the
// whole conversation on every request (the standard clients) continues
// the conversation the node stored when its history is exactly what the
// node answered, so the model gets each message once and the audit trail
// keeps one conversation; a history the node did not answer (edited, an
// answer regenerated, unknown) starts afresh from the replayed history,
// as every request did before.
func TestReplayedHistoryContinuesItsConversation(t *testing.T) {
	var mu sync.Mutex
	var seen [][]llm.Message // the messages of each completion
	model := funcProvider(func(_ context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		seen = append(seen, req.Messages)
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1].Content
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "re: " + last}}, nil
	})
	_, base, token := startAPI(t, nil, Options{Provider: model})
	chat := func(t *testing.T, stream bool, turns ...string) (conversation string, sent []llm.Message) {
		t.Helper()
		var msgs []map[string]any
		for i, s := range turns {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]any{"role": role, "content": s})
		}
		mu.Lock()
		before := len(seen)
		mu.Unlock()
		resp := send(t, "POST", base+"/v1/chat/completions", token, map[string]any{"model": "evoclaw", "messages": msgs, "stream": stream})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "re: "+turns[len(turns)-1]) {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != before+1 {
			t.Fatalf("%d completions, want 1", len(seen)-before)
		}
		return resp.Header.Get(ConversationHeader), seen[before]
	}
	users := func(msgs []llm.Message) (n map[string]int) {
		n = map[string]int{}
		for _, m := range msgs {
			if m.Role == llm.RoleUser {
				n[m.Content]++
			}
		}
		return n
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			a := fmt.Sprintf("first %v", stream)
			c1, _ := chat(t, stream, a)
			c2, sent := chat(t, stream, a, "re: "+a, "second")
			if c2 != c1 {
				t.Fatalf("the replayed history started %s, want %s continued", c2, c1)
			}
			if n := users(sent); n[a] != 1 || n["second"] != 1 {
				t.Fatalf("the model got the user's messages %v times, want each once: %+v", n, sent)
			}
			c3, _ := chat(t, stream, a, "re: "+a, "second", "re: second", "third")
			if c3 != c1 {
				t.Fatalf("the third turn started %s, want %s continued", c3, c1)
			}
			// The second turn again (an answer regenerated): its history
			// was taken by the first, so this one is a conversation of its
			// own, from the replayed history.
			c4, sent := chat(t, stream, a, "re: "+a, "second")
			if c4 == c1 || c4 == "" {
				t.Fatalf("a regenerated answer continued %q", c4)
			}
			if n := users(sent); n[a] != 1 || n["second"] != 1 {
				t.Fatalf("a fresh conversation from the replay got %v", n)
			}
			for name, turns := range map[string][]string{
				"an answer edited":   {a, "re: " + a + "!", "second"},
				"a history not seen": {"never asked", "never answered", "second"},
			} {
				if c, _ := chat(t, stream, turns...); c == c1 || c == c4 || c == "" {
					t.Fatalf("%s: continued %q", name, c)
				}
			}
		})
	}
}

// TestStatelessChatsBounded: the transcripts remembered are at most
// MaxStatelessChats, the oldest forgotten first, and none is taken past
// StatelessChatTTL.
func TestStatelessChatsBounded(t *testing.T) {
	var s statelessChats
	now := time.Unix(1_700_000_000, 0)
	key := func(i int) [32]byte { return transcriptKey(llm.Message{Role: llm.RoleUser, Content: fmt.Sprint(i)}) }
	for i := range MaxStatelessChats + 100 {
		s.put(key(i), fmt.Sprint("c", i), now)
	}
	if got := s.len(); got != MaxStatelessChats {
		t.Fatalf("%d remembered, want %d", got, MaxStatelessChats)
	}
	if _, ok := s.take(key(99), now); ok {
		t.Fatal("one of the oldest was kept past the bound")
	}
	if c, ok := s.take(key(100), now); !ok || c != "c100" {
		t.Fatalf("the oldest kept: %q %v", c, ok)
	}
	if _, ok := s.take(key(101), now.Add(StatelessChatTTL+time.Second)); ok {
		t.Fatal("taken past its time")
	}
	// A put past the time forgets the expired ones.
	s.put(key(-1), "late", now.Add(StatelessChatTTL+time.Second))
	if got := s.len(); got != 1 {
		t.Fatalf("%d remembered after the rest expired, want 1", got)
	}
	// Distinct transcripts that join to the same text are distinct keys.
	if transcriptKey(llm.Message{Role: llm.RoleUser, Content: "ab"}) == transcriptKey(llm.Message{Role: llm.RoleUser, Content: "a"}, llm.Message{Role: llm.RoleUser, Content: "b"}) {
		t.Fatal("length prefixes missing")
	}
}
