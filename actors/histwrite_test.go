package actors

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// countingHistory is a memHistory that counts its writes and lets a test
// look at what is stored when a command goes out.
type countingHistory struct {
	memHistory
	writes atomic.Int32
}

func (s *countingHistory) AppendHistory(ctx context.Context, id string, msgs []llm.Message) error {
	s.writes.Add(1)
	return s.memHistory.AppendHistory(ctx, id, msgs)
}

func (s *countingHistory) stored(id string) []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Message(nil), s.m[id]...)
}

// roles lists the roles of msgs, with the call ids of assistant and tool
// messages: "user assistant[c1] tool[c1] assistant".
func roles(msgs []llm.Message) string {
	var out []string
	for _, m := range msgs {
		r := m.Role
		switch {
		case len(m.ToolCalls) > 0:
			var ids []string
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			r += "[" + strings.Join(ids, ",") + "]"
		case m.ToolCallID != "":
			r += "[" + m.ToolCallID + "]"
		}
		out = append(out, r)
	}
	return strings.Join(out, " ")
}

// A chat waits for one history write before each model turn's tool calls
// are dispatched and one before its answer, no more (three before: one
// before each completion and the answer). The write before a dispatch
// holds the assistant message that asks for the call, so a restarted node
// knows every call that may have run.
func TestHistoryWritesPerChat(t *testing.T) {
	tests := []struct {
		name       string
		transcript string
		writes     int32
		atDispatch []string // the stored history when each command goes out
		stored     string
	}{
		{"no tool", transcript(`{"content":"plain"}`), 1, nil, "user assistant"},
		{"one tool call", echoTranscript, 2, []string{"user assistant[c1]"}, "user assistant[c1] tool[c1] assistant"},
		{"two tool turns", transcript(callTurn("c1", "pi-1__echo", `{"text":"a"}`), callTurn("c2", "pi-1__echo", `{"text":"b"}`),
			`{"content":"done"}`), 3, []string{"user assistant[c1]", "user assistant[c1] tool[c1] assistant[c2]"},
			"user assistant[c1] tool[c1] assistant[c2] tool[c2] assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &countingHistory{}
			h := newHarness(t, tt.transcript, func(o *ConvOptions) { o.History = store })
			var atDispatch []string
			echo := echoReply(h)
			h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
				atDispatch = append(atDispatch, roles(store.stored("c"))) // calls of this chat run one at a time
				echo(cmd, p)
			}
			if ans := h.chat(t, "go"); ans.Err != nil {
				t.Fatalf("answer %+v", ans)
			}
			if got := store.writes.Load(); got != tt.writes {
				t.Errorf("history writes %d, want %d", got, tt.writes)
			}
			if strings.Join(atDispatch, " | ") != strings.Join(tt.atDispatch, " | ") {
				t.Errorf("stored at each dispatch %q, want %q", atDispatch, tt.atDispatch)
			}
			if got := roles(store.stored("c")); got != tt.stored {
				t.Errorf("stored %q, want %q", got, tt.stored)
			}
		})
	}
}

// A node that stopped while a call ran left the call's assistant message
// stored without a result: the next load answers the call as interrupted,
// the model sees it answered, and the answer is stored before the chat's.
func TestCutCallsAreAnsweredOnLoad(t *testing.T) {
	store := &countingHistory{}
	cut := []llm.Message{{Role: llm.RoleUser, Content: "run it"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "pi-1__echo", Arguments: []byte(`{"text":"x"}`)},
			{ID: "c2", Name: "pi-1__echo", Arguments: []byte(`{"text":"y"}`)}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Name: "pi-1__echo", Content: "echo:x"}}
	if err := store.memHistory.AppendHistory(context.Background(), "c", cut); err != nil {
		t.Fatal(err)
	}
	prov := &recordingProvider{}
	h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.History = store; o.Provider = prov })
	if ans := h.chat(t, "again"); ans.Err != nil || ans.Text != "answer" {
		t.Fatalf("answer %+v", ans)
	}
	seen := prov.last().Messages
	if got, want := roles(seen), "user assistant[c1,c2] tool[c1] tool[c2] user"; got != want {
		t.Fatalf("model saw %q, want %q", got, want)
	}
	if c2 := seen[3]; !c2.IsError || !strings.Contains(c2.Content, string(wire.ErrInterrupted)) {
		t.Fatalf("cut call answered %+v, want an interrupted error", c2)
	}
	if got, want := roles(store.stored("c")), "user assistant[c1,c2] tool[c1] tool[c2] user assistant"; got != want {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

// A chat canceled while its call runs leaves the call answered in the
// stored history (its assistant message was stored before the dispatch),
// and the next chat's model sees no call without a result.
func TestCanceledCallIsClosedInTheHistory(t *testing.T) {
	store := &countingHistory{}
	tr := transcript(callTurn("c1", "pi-1__echo", `{"text":"slow"}`), `{"content":"after"}`)
	h := newHarness(t, tr, func(o *ConvOptions) {
		o.History = store
		o.TimeoutRules = map[string]TimeoutRule{CategoryOther: {Default: time.Minute, Max: time.Minute}}
	})
	sent := make(chan struct{}, 1)
	h.edge.onTool = func(wire.Command, wire.ToolPayload) { sent <- struct{}{} }
	running := askLater(h.sys.Root, h.convs.PID, &Chat{ConversationID: "c", Text: "go"}, 20*time.Second)
	<-sent
	h.sys.Root.Send(h.convs.PID, &Cancel{ConversationID: "c"})
	res, err := running()
	if err != nil {
		t.Fatal(err)
	}
	if ans := res.(*Answer); !errors.Is(ans.Err, ErrCanceled) {
		t.Fatalf("answer %+v, want canceled", ans)
	}
	if got, want := roles(store.stored("c")), "user assistant[c1] tool[c1]"; got != want {
		t.Fatalf("stored %q, want %q", got, want)
	}
	if ans := h.chat(t, "next"); ans.Err != nil || ans.Text != "after" {
		t.Fatalf("next chat %+v", ans)
	}
}

func TestCloseCut(t *testing.T) {
	call := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "t", Arguments: []byte(`{}`)})
		}
		return m
	}
	result := func(id string) llm.Message { return llm.Message{Role: llm.RoleTool, ToolCallID: id} }
	user := llm.Message{Role: llm.RoleUser, Content: "u"}
	tests := []struct {
		name    string
		history []llm.Message
		want    string
	}{
		{"empty", nil, ""},
		{"answered", []llm.Message{user, call("a"), result("a"), {Role: llm.RoleAssistant, Content: "x"}}, ""},
		{"all cut", []llm.Message{user, call("a", "b")}, "tool[a] tool[b]"},
		{"one of two cut", []llm.Message{user, call("a", "b"), result("b")}, "tool[a]"},
		{"all results in", []llm.Message{user, call("a", "b"), result("b"), result("a")}, ""},
		{"user after a call is not a tail", []llm.Message{call("a"), user}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := roles(closeCut(tt.history)); got != tt.want {
				t.Fatalf("closeCut %q, want %q", got, tt.want)
			}
		})
	}
}
