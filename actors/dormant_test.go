package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
	"weak"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

func TestCompactHistoryKeepsEveryField(t *testing.T) {
	img := []llm.Part{{Type: "text", Text: "look"}}
	cases := []struct {
		name string
		in   []llm.Message
	}{
		{"empty", nil},
		{"one user message", []llm.Message{{Role: llm.RoleUser, Content: "hello"}}},
		{"a tool round", []llm.Message{
			{Role: llm.RoleUser, Content: "run it"},
			{Role: llm.RoleAssistant, Content: "calling", ToolCalls: []llm.ToolCall{
				{ID: "c1", Name: "pi__echo", Arguments: json.RawMessage(`{"text":"hi"}`)},
				{ID: "c2", Name: "pi__bad", Arguments: json.RawMessage(`"{\"a\": "`), ArgumentsError: "unexpected end"}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Name: "pi__echo", Content: "echo:hi"},
			{Role: llm.RoleTool, ToolCallID: "c2", Name: "pi__bad", Content: "invalid", IsError: true},
			{Role: llm.RoleAssistant, Content: "done"}}},
		{"images and an unknown role", []llm.Message{
			{Role: "developer", Content: "be brief"},
			{Role: llm.RoleUser, Parts: img},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "x", Name: "t", Arguments: json.RawMessage(`{}`)}}}}},
		{"a call without arguments", []llm.Message{
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "x", Name: "t"}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compactHistory(tc.in)
			if len(tc.in) == 0 {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.in) {
				t.Fatalf("compacted\n%+v\nwant\n%+v", got, tc.in)
			}
			if cap(got) != len(got) {
				t.Errorf("cap %d, len %d: an append would write past the history", cap(got), len(got))
			}
			for i, m := range got {
				if cap(m.ToolCalls) != len(m.ToolCalls) {
					t.Errorf("message %d: tool calls cap %d, len %d", i, cap(m.ToolCalls), len(m.ToolCalls))
				}
				for j, c := range m.ToolCalls {
					if cap(c.Arguments) != len(c.Arguments) {
						t.Errorf("message %d call %d: arguments cap %d, len %d", i, j, cap(c.Arguments), len(c.Arguments))
					}
				}
			}
		})
	}
}

// TestCompactHistoryAppendsDoNotTouchNeighbours: the arenas are shared, so
// an append to one message's slices must copy.
func TestCompactHistoryAppendsDoNotTouchNeighbours(t *testing.T) {
	in := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "t", Arguments: json.RawMessage(`{"n":1}`)}}},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "b", Name: "t", Arguments: json.RawMessage(`{"n":2}`)}}},
	}
	got := compactHistory(in)
	_ = append(got[0].ToolCalls, llm.ToolCall{ID: "intruder"})
	_ = append(got[0].ToolCalls[0].Arguments, `XXXXXX`...)
	if got[1].ToolCalls[0].ID != "b" || string(got[1].ToolCalls[0].Arguments) != `{"n":2}` {
		t.Fatalf("an append to the first message changed the second: %+v", got[1])
	}
	_ = append(got, llm.Message{Role: llm.RoleUser})
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("after appends: %+v", got)
	}
}

// loadCountingHistory is a memHistory that counts loads.
type loadCountingHistory struct {
	memHistory
	loads atomic.Int64
}

func (s *loadCountingHistory) LoadHistory(ctx context.Context, id string) ([]llm.Message, error) {
	s.loads.Add(1)
	return s.memHistory.LoadHistory(ctx, id)
}

// hasActor tells whether conversation id has an actor, under any of the
// names its incarnations take.
func hasActor(h *harness, id string) bool {
	for n := range 9 {
		name := "conv-" + id
		if n > 0 {
			name = fmt.Sprintf("conv-%s@%d", id, n)
		}
		parent := h.convs.PID.Id
		if _, ok := h.sys.ProcessRegistry.Get(actor.NewPID(h.sys.Address(), parent+"/"+safeName(parent, name))); ok {
			return true
		}
	}
	return false
}

// state asks the manager for conversation id's state.
func state(t *testing.T, h *harness, id string) *SessionState {
	t.Helper()
	res, err := Ask(h.sys.Root, h.convs.PID, &StateQuery{ConversationID: id}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*SessionState)
}

const rememberTranscript = `{"name":"t","turns":[
 {"content":"calling","tool_calls":[{"id":"c1","name":"pi-1__echo","arguments":{"text":"hi"}}]},
 {"content":"tool said: {{result c1}}"},
 {"content":"remembered: {{result c1}}"}]}`

func TestIdleConversationGoesDormantAndComesBackFromMemory(t *testing.T) {
	store := &loadCountingHistory{}
	h := newHarness(t, rememberTranscript, func(o *ConvOptions) {
		o.DormantAfter, o.IdleTimeout, o.History = 50*time.Millisecond, time.Minute, store
	})
	h.edge.onTool = echoReply(h)
	if ans := h.chat(t, "one"); ans.Err != nil || ans.Text != "tool said: echo:hi" {
		t.Fatalf("first chat: %+v", ans)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return !hasActor(h, "c") }, "the idle conversation's actor stopped")
	if st := state(t, h, "c"); !st.Loaded || st.Running || st.Queued != 0 {
		t.Fatalf("dormant conversation's state %+v, want loaded and idle", st)
	}
	// The third turn is reached only with the first two in the history,
	// and the store was read once only: by the first actor.
	if ans := h.chat(t, "two"); ans.Err != nil || ans.Text != "remembered: echo:hi" {
		t.Fatalf("after dormancy: %+v", ans)
	}
	if n := store.loads.Load(); n != 1 {
		t.Fatalf("history loaded %d times, want once (the woken actor has it from memory)", n)
	}
	// What the woken actor appended is stored as before.
	got, _ := store.memHistory.LoadHistory(context.Background(), "c")
	if len(got) != 6 || got[4].Content != "two" || got[5].Content != "remembered: echo:hi" {
		t.Fatalf("stored history %+v", got)
	}
}

func TestDormantConversationIsForgottenAfterIdleTimeout(t *testing.T) {
	store := &loadCountingHistory{}
	h := newHarness(t, rememberTranscript, func(o *ConvOptions) {
		o.DormantAfter, o.IdleTimeout, o.History = 20*time.Millisecond, 200*time.Millisecond, store
	})
	h.edge.onTool = echoReply(h)
	if ans := h.chat(t, "one"); ans.Err != nil {
		t.Fatal(ans.Err)
	}
	// Polled by registry first: a StateQuery forwarded to the actor would
	// count as activity and keep it from going dormant.
	testenv.Eventually(t, 5*time.Second, func() bool { return !hasActor(h, "c") }, "the conversation dormant")
	testenv.Eventually(t, 5*time.Second, func() bool { return !state(t, h, "c").Loaded }, "the dormant conversation forgotten")
	if ans := h.chat(t, "two"); ans.Err != nil || ans.Text != "remembered: echo:hi" {
		t.Fatalf("after being forgotten: %+v", ans)
	}
	if n := store.loads.Load(); n != 2 {
		t.Fatalf("history loaded %d times, want twice (the forgotten conversation reads the store)", n)
	}
}

// TestEvictForgetsADormantConversation: another node took the conversation
// over; its next chat here must read what that node stored, not answer
// from the memory this node kept.
func TestEvictForgetsADormantConversation(t *testing.T) {
	tr := `{"name":"t","turns":[{"content":"turn 1"},{"content":"turn 2"},{"content":"turn 3"}]}`
	store := &memHistory{}
	h := newHarness(t, tr, func(o *ConvOptions) { o.DormantAfter, o.History = 20*time.Millisecond, store })
	if ans := h.chat(t, "one"); ans.Err != nil || ans.Text != "turn 1" {
		t.Fatalf("first chat: %+v", ans)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return !hasActor(h, "c") }, "the conversation dormant")
	if err := store.AppendHistory(context.Background(), "c", []llm.Message{
		{Role: llm.RoleUser, Content: "elsewhere"}, {Role: llm.RoleAssistant, Content: "turn 2"}}); err != nil {
		t.Fatal(err)
	}
	h.sys.Root.Send(h.convs.PID, &Evict{ConversationID: "c"})
	if ans := h.chat(t, "two"); ans.Err != nil || ans.Text != "turn 3" {
		t.Fatalf("after eviction: %+v, want the third turn (history reloaded)", ans)
	}
}

// TestDormantConversationsAreBounded: the manager keeps at most
// MaxDormant dormant conversations and MaxDormantBytes of their history;
// the others are forgotten (their next chat reads the store).
func TestDormantConversationsAreBounded(t *testing.T) {
	tr := `{"name":"t","turns":[{"content":"turn 1"},{"content":"turn 2"}]}`
	// What each conversation below holds once dormant.
	one := historyBytes([]llm.Message{{Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleAssistant, Content: "turn 1"}})
	tests := []struct {
		name  string
		bound func(o *ConvOptions)
	}{
		{"by count", func(o *ConvOptions) { o.MaxDormant = 2 }},
		{"by bytes", func(o *ConvOptions) { o.MaxDormantBytes = 2*one + one/2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tr, func(o *ConvOptions) {
				o.DormantAfter = 20 * time.Millisecond
				tt.bound(o)
			})
			ids := []string{"a", "b", "c", "d"}
			for _, id := range ids {
				if ans := h.ask(t, &Chat{ConversationID: id, Text: "hi"}); ans.Err != nil {
					t.Fatal(ans.Err)
				}
			}
			testenv.Eventually(t, 5*time.Second, func() bool {
				for _, id := range ids {
					if hasActor(h, id) {
						return false
					}
				}
				return true
			}, "every conversation's actor stopped")
			kept := 0
			for _, id := range ids {
				if state(t, h, id).Loaded {
					kept++
				}
			}
			if kept != 2 {
				t.Fatalf("%d conversations kept dormant, want 2", kept)
			}
			// A forgotten conversation still answers.
			for _, id := range ids {
				if ans := h.ask(t, &Chat{ConversationID: id, Text: "again"}); ans.Err != nil {
					t.Fatalf("conversation %s after dormancy: %+v", id, ans)
				}
			}
		})
	}
}

// TestChatsRacingDormancy: chats that come as the conversation goes
// dormant (and its actor stops) are all answered, in order, with the whole
// history: each turn's answer depends on how many came before it.
func TestChatsRacingDormancy(t *testing.T) {
	const n = 40
	turns := make([]string, n)
	for i := range turns {
		turns[i] = fmt.Sprintf(`{"content":"turn %d"}`, i+1)
	}
	tr := `{"name":"t","turns":[` + joinComma(turns) + `]}`
	h := newHarness(t, tr, func(o *ConvOptions) { o.DormantAfter = time.Millisecond })
	for i := range n {
		if i%3 == 0 {
			time.Sleep(2 * time.Millisecond) // let some of them go dormant first
		}
		if ans := h.chat(t, "next"); ans.Err != nil || ans.Text != fmt.Sprintf("turn %d", i+1) {
			t.Fatalf("chat %d: %+v", i+1, ans)
		}
	}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// idleModes are the two ways an idle conversation gives up its actor.
var idleModes = []struct {
	name string
	tune func(*ConvOptions)
}{
	{"dormant", func(o *ConvOptions) { o.DormantAfter = 20 * time.Millisecond }},
	{"passivated", func(o *ConvOptions) { o.DormantAfter, o.IdleTimeout = -1, 20*time.Millisecond }},
}

// TestStoppedConversationsAreReleased: once a conversation's actor stopped
// (gone dormant, or passivated), nothing keeps the actor's state
// reachable. protoactor's set of the manager's children kept a stopped
// child's PID, and with it the actor, past the end of its slice: of 50
// conversations, most stayed in memory for good.
func TestStoppedConversationsAreReleased(t *testing.T) {
	for _, tc := range idleModes {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var made []weak.Pointer[conversation]
			h := newHarness(t, echoTranscript, func(o *ConvOptions) {
				tc.tune(o)
				o.started = func(c *conversation) {
					mu.Lock()
					made = append(made, weak.Make(c))
					mu.Unlock()
				}
			})
			h.edge.onTool = echoReply(h)
			const n = 50
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					if ans := h.ask(t, &Chat{ConversationID: fmt.Sprint("k", i), Text: "x"}); ans.Err != nil {
						t.Error(ans.Err)
					}
				})
			}
			wg.Wait()
			testenv.Eventually(t, 5*time.Second, func() bool {
				for i := range n {
					if hasActor(h, fmt.Sprint("k", i)) {
						return false
					}
				}
				return true
			}, "every conversation's actor stopped")
			live := func() int {
				runtime.GC()
				mu.Lock()
				defer mu.Unlock()
				k := 0
				for _, w := range made {
					if w.Value() != nil {
						k++
					}
				}
				return k
			}
			testenv.Eventually(t, 5*time.Second, func() bool { return live() == 0 }, "every stopped conversation collected")
			if len(made) != n {
				t.Fatalf("%d conversation actors made, want %d", len(made), n)
			}
		})
	}
}

// TestSlowTurnStillGoesIdle: the receive timeout fires during a turn that
// waits longer than it on a tool (and is ignored then); the conversation
// must still go dormant, or passivate, once the turn ended. protoactor
// cancels a receive timeout when it fires, so such a conversation stayed
// in memory for good.
func TestSlowTurnStillGoesIdle(t *testing.T) {
	for _, tc := range idleModes {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, echoTranscript, tc.tune)
			h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
				time.Sleep(150 * time.Millisecond) // several idle times without a message
				echoReply(h)(cmd, p)
			}
			if ans := h.chat(t, "slow"); ans.Err != nil || ans.Text != "tool said: echo:hi" {
				t.Fatalf("answer %+v", ans)
			}
			testenv.Eventually(t, 5*time.Second, func() bool { return !hasActor(h, "c") }, "the conversation's actor stopped after its slow turn")
		})
	}
}

// TestRestartedConversationStillGoesIdle: the supervisor restarts a
// conversation actor whose chat panicked. The manager counted that chat,
// so the restarted actor must count it too, or every request of its to go
// idle is refused as crossed by a chat and it stays in memory for ever.
func TestRestartedConversationStillGoesIdle(t *testing.T) {
	var crashed atomic.Bool
	h := newHarness(t, `{"name":"t","turns":[{"content":"turn 1"}]}`, func(o *ConvOptions) {
		o.DormantAfter, o.IdleTimeout = 20*time.Millisecond, time.Minute
		o.chatFault = func(m *Chat) {
			if m.Text == "boom" && crashed.CompareAndSwap(false, true) {
				panic("injected conversation fault")
			}
		}
	})
	h.sys.Root.Send(h.convs.PID, &Chat{ConversationID: "c", Text: "boom"})
	if ans := h.chat(t, "one"); ans.Err != nil || ans.Text != "turn 1" {
		t.Fatalf("chat after the restart: %+v", ans)
	}
	if !crashed.Load() {
		t.Fatal("the conversation never took the chat that panics")
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return !hasActor(h, "c") }, "the restarted conversation went dormant")
	if st := state(t, h, "c"); !st.Loaded {
		t.Fatalf("state %+v, want the conversation dormant", st)
	}
}

func TestTruncateCutsOnACharacter(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is two bytes: not cut in half
		{"日本語", 4, "日…"},
		{"日本語", 2, "…"},
	}
	for _, tt := range tests {
		if got := truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
		if got := truncate(tt.in, tt.n); !utf8.ValidString(got) {
			t.Errorf("truncate(%q, %d) = %q: not valid UTF-8", tt.in, tt.n, got)
		}
	}
}

// TestFreshConversationDoesNotReadTheStore: a chat whose id the caller
// just made (Chat.Fresh) starts with no history without a read of the
// store, and stores its turns as any other; a conversation that is not
// fresh reads the store as before, and a fresh flag on a chat for a
// conversation that has an actor changes nothing.
func TestFreshConversationDoesNotReadTheStore(t *testing.T) {
	cases := []struct {
		name      string
		fresh     []bool // Fresh of each chat, in turn
		wantLoads int64
	}{
		{"fresh", []bool{true}, 0},
		{"not fresh", []bool{false}, 1},
		{"fresh on a running conversation", []bool{false, true}, 1},
		{"fresh, then a chat that is not", []bool{true, false}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := &loadCountingHistory{}
			h := newHarness(t, rememberTranscript, func(o *ConvOptions) { o.History = store })
			h.edge.onTool = echoReply(h)
			want := []string{"tool said: echo:hi", "remembered: echo:hi"}
			for i, fresh := range tc.fresh {
				ans := h.ask(t, &Chat{ConversationID: "c", Text: fmt.Sprint("turn ", i), Fresh: fresh})
				if ans.Err != nil || ans.Text != want[i] {
					t.Fatalf("chat %d: %+v, want %q", i, ans, want[i])
				}
			}
			if n := store.loads.Load(); n != tc.wantLoads {
				t.Fatalf("history loaded %d times, want %d", n, tc.wantLoads)
			}
			got, _ := store.memHistory.LoadHistory(context.Background(), "c")
			if wantLen := 4 + 2*(len(tc.fresh)-1); len(got) != wantLen || got[0].Content != "turn 0" {
				t.Fatalf("stored history %+v, want %d messages from turn 0", got, wantLen)
			}
		})
	}
}
