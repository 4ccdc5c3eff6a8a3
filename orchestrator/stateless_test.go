package orchestrator

import (
	"context"
	"encoding/json"
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

// TestReplayRefusedBeforeStartStillContinues: a replayed transcript whose
// chat is refused before it starts (its client gave up waiting for a chat
// slot; its input found no room, 429) stays remembered, so the client's
// retry continues the conversation instead of storing its whole history
// again as a fresh one.
func TestReplayRefusedBeforeStartStillContinues(t *testing.T) {
	release := make(chan struct{})
	holding := make(chan struct{}, 1)
	model := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		if last == "hold" {
			holding <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "re: " + last}}, nil
	})
	node, base, token := startAPI(t, func(c *Config) {
		c.Loop.MaxRunningChats = 1
		c.Loop.ChatInputBurstMB, c.Loop.ChatInputMBPerHour = 8, 1
	}, Options{Provider: model})
	// chat replays turns (user and assistant in turn) and returns the
	// status and the conversation of the answer; 0 when ctx ended first.
	chat := func(ctx context.Context, turns ...string) (int, string) {
		var msgs []map[string]string
		for i, s := range turns {
			msgs = append(msgs, map[string]string{"role": []string{"user", "assistant"}[i%2], "content": s})
		}
		b, _ := json.Marshal(map[string]any{"model": "evoclaw", "messages": msgs})
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(string(b)))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, ""
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get(ConversationHeader)
	}
	// remembered waits until the node remembers n transcripts.
	remembered := func(t *testing.T, n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); node.stateless.len() != n; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the node remembers %d transcripts, want %d", node.stateless.len(), n)
			}
		}
	}
	code, c1 := chat(context.Background(), "first")
	if code != http.StatusOK {
		t.Fatalf("first chat: %d", code)
	}
	history := []string{"first", "re: first"}
	for _, tt := range []struct {
		name    string
		message string
		// refuse makes the node refuse the next chat, and returns what
		// ends that; hangUp: the client gives up once its chat waits.
		refuse func() (undo func())
		hangUp bool
		status int
	}{
		{name: "gave up waiting for a slot", message: "second", hangUp: true,
			refuse: func() func() {
				held := make(chan error, 1)
				go func() {
					_, err := node.Chat(context.Background(), "holder", "hold")
					held <- err
				}()
				<-holding
				return func() {
					close(release)
					if err := <-held; err != nil {
						t.Errorf("holding chat: %v", err)
					}
				}
			}},
		{name: "input found no room", message: "third " + strings.Repeat("z", 2*smallBody),
			status: http.StatusTooManyRequests,
			refuse: func() func() {
				node.chatInput.mu.Lock()
				node.chatInput.tokens = 0
				node.chatInput.mu.Unlock()
				return func() {
					node.chatInput.mu.Lock()
					node.chatInput.tokens = node.chatInput.burst
					node.chatInput.mu.Unlock()
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			turns := append(history[:len(history):len(history)], tt.message)
			undo := sync.OnceFunc(tt.refuse())
			defer undo()
			ctx, hangUp := context.WithCancel(context.Background())
			if tt.hangUp {
				go func() {
					// The chat has taken its transcript: it waits for a slot.
					for node.stateless.len() != 0 && ctx.Err() == nil {
						time.Sleep(2 * time.Millisecond)
					}
					hangUp()
				}()
			}
			code, _ := chat(ctx, turns...)
			hangUp()
			if code != tt.status {
				t.Fatalf("refused chat answered %d, want %d", code, tt.status)
			}
			// The node sees a client hang up a moment after it did: the
			// slot must not free before it gave the transcript back.
			remembered(t, 1)
			undo()
			code, c := chat(context.Background(), turns...)
			if code != http.StatusOK || c != c1 {
				t.Fatalf("the retry answered %d in %s, want %s continued", code, c, c1)
			}
			history = append(turns, "re: "+tt.message)
		})
	}
}
