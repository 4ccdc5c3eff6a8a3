//go:build !nocluster

package orchestrator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

func TestDecodeEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string // err "" means valid
	}{
		{"chat", `{"op":"chat","req":"r1","reply_addr":"h:1","reply_id":"p","chat":{"conversation_id":"c","text":"hi"}}`, ""},
		{"chat without reply", `{"op":"chat","req":"r1","chat":{"conversation_id":"c","text":"hi"}}`, "reply actor"},
		{"chat without input", `{"op":"chat","req":"r1","reply_addr":"h:1","reply_id":"p"}`, "without its input"},
		{"chat with sampling", `{"op":"chat","req":"r1","reply_addr":"h:1","reply_id":"p","chat":{"conversation_id":"c","text":"hi","sampling":{"temperature":0,"top_p":1,"seed":-3}}}`, ""},
		{"chat sampling out of range", `{"op":"chat","req":"r1","reply_addr":"h:1","reply_id":"p","chat":{"conversation_id":"c","text":"hi","sampling":{"temperature":2.5}}}`, "temperature"},
		{"cancel", `{"op":"cancel","req":"r1"}`, ""},
		{"progress", `{"op":"progress","req":"r1","progress":{"kind":"tool_start"}}`, ""},
		{"progress empty", `{"op":"progress","req":"r1"}`, "without its step"},
		{"answer", `{"op":"answer","req":"r1","answer":{"conversation_id":"c","text":"ok"}}`, ""},
		{"error", `{"op":"answer","req":"r1","error":{"Node":"n","Status":503,"Type":"x","Message":"m"}}`, ""},
		{"answer and error", `{"op":"answer","req":"r1","answer":{},"error":{}}`, "exactly one"},
		{"answer neither", `{"op":"answer","req":"r1"}`, "exactly one"},
		{"no req", `{"op":"cancel"}`, "req"},
		{"long req", `{"op":"cancel","req":"` + strings.Repeat("r", 65) + `"}`, "req"},
		{"unknown op", `{"op":"drop","req":"r1"}`, "unknown op"},
		{"not json", `{`, "cluster message"},
		{"too large", `{"op":"cancel","req":"r1","x":"` + strings.Repeat("a", maxEnvelope) + `"}`, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := decodeEnvelope([]byte(tc.in))
			if !testenv.WantErr(t, err, tc.err) && e == nil {
				t.Fatal("decodeEnvelope: no error and no envelope")
			}
		})
	}
}

// TestEnvelopeRoundTrip: what a node sends, the other decodes to the same.
func TestEnvelopeRoundTrip(t *testing.T) {
	in := &envelope{Op: opAnswer, Req: "fwd-1", Answer: &fwdAnswer{ConversationID: "c", Text: "done", Iterations: 2, ToolCalls: 1, FinishReason: "length",
		Calls: []actors.CallSummary{{Tool: "t", Success: true, Result: "ok"}}}}
	out, err := decodeEnvelope(in.message().Value)
	if err != nil {
		t.Fatal(err)
	}
	a, b := mustJSON(t, in), mustJSON(t, out)
	if a != b {
		t.Fatalf("round trip:\n%s\n%s", a, b)
	}
}

// TestForwardedChatKeepsItsInput: what a forwarded chat carries arrives
// in the input the owner runs, sampling hints included.
func TestForwardedChatKeepsItsInput(t *testing.T) {
	temp, seed := 0.0, int64(7)
	in := ChatInput{ConversationID: "c", Text: "hi", System: "s", MaxTokens: 9, Sampling: llm.Sampling{Temperature: &temp, Seed: &seed}}
	e, err := decodeEnvelope((&envelope{Op: opChat, Req: "r", ReplyAddr: "a", ReplyID: "b", Chat: forwarded(in)}).message().Value)
	if err != nil {
		t.Fatal(err)
	}
	there := e.Chat.input("c", 1)
	type sent struct {
		Text, System string
		MaxTokens    int
		Sampling     llm.Sampling
	}
	if a, b := mustJSON(t, sent{in.Text, in.System, in.MaxTokens, in.Sampling}), mustJSON(t, sent{there.Text, there.System, there.MaxTokens, there.Sampling}); a != b {
		t.Fatalf("input here %s, there %s", a, b)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestChatErrorStatusAcrossNodes(t *testing.T) {
	code, typ := chatErrorStatus(&RemoteChatError{Node: "n2", Status: 429, Type: ErrTypeBusy, Message: "busy"})
	if code != 429 || typ != ErrTypeBusy {
		t.Errorf("remote busy = %d %s", code, typ)
	}
	code, typ = chatErrorStatus(&RemoteChatError{Node: "n2", Status: 200, Type: "odd", Message: "?"})
	if code != 500 || typ != ErrTypeInternal {
		t.Errorf("remote error with a success status = %d %s, want the internal error", code, typ)
	}
	code, typ = chatErrorStatus(ErrNodeLost)
	if code != 503 || typ != ErrTypeNodeLost {
		t.Errorf("node lost = %d %s", code, typ)
	}
	// A chat the owner refused before it started is one here too (the
	// forwarding node names no conversation it made up for it).
	for _, remote := range []RemoteChatError{{Node: "n2", Status: 503, Type: ErrTypeNotReady, NotStarted: true}, {Node: "n2", Status: 502, Type: ErrTypeUpstream}} {
		e, err := decodeEnvelope((&envelope{Op: opAnswer, Req: "r", Error: &remote}).message().Value)
		if err != nil {
			t.Fatal(err)
		}
		if got := refusedBeforeStart(fmt.Errorf("chat c: %w", e.Error)); got != remote.NotStarted {
			t.Errorf("refused before start across nodes: %v, want %v", got, remote.NotStarted)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(`{"op":"chat","req":"r1","reply_addr":"h:1","reply_id":"p","chat":{"conversation_id":"c","text":"hi"}}`))
	f.Add([]byte(`{"op":"answer","req":"r1","error":{"Status":503}}`))
	f.Add([]byte(`{"op":"progress","req":"r","progress":{}}`))
	f.Add([]byte(`{"op":"chat","req":"r1","reply_addr":"h:1","reply_id":"p","chat":{"conversation_id":"c","text":"hi","sampling":{"presence_penalty":-2,"seed":7}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEnvelope(b)
		if err != nil {
			return
		}
		switch {
		case e.Op == opChat && e.Chat != nil && checkSampling(e.Chat.Sampling) != nil:
			t.Fatalf("accepted sampling hints out of range: %+v", e.Chat.Sampling)
		case e.Req == "" || len(e.Req) > 64:
			t.Fatalf("accepted req %q", e.Req)
		case e.Op == opChat && (e.Chat == nil || e.ReplyAddr == "" || e.ReplyID == ""):
			t.Fatal("accepted a chat it cannot run")
		case e.Op == opProgress && e.Progress == nil:
			t.Fatal("accepted an empty progress")
		case e.Op == opAnswer && (e.Answer == nil) == (e.Error == nil):
			t.Fatal("accepted an ambiguous answer")
		}
	})
}

// TestSpawnBudgetCrossesNodes: a spawned chat forwarded to the node that
// owns its conversation takes half of what its tree may still start, and
// the tree here gives that half up, so the two together stay within the
// budget; a top-level chat brings none (the owner gives it a budget of its
// own), and a spawned chat from a node that sends no share may start
// nothing there. Before, a forwarded spawned chat ran with no budget at
// all, bounded by depth and children only.
func TestSpawnBudgetCrossesNodes(t *testing.T) {
	const maxSpawns = 32
	tests := []struct {
		name      string
		depth     int
		left      int64 // the tree's budget here (at depth 0: none yet)
		wantShare int64 // the budget the chat runs with there; -1: none given (a fresh one, at depth 0)
		wantLeft  int64 // what stays here
	}{
		{"spawned, 20 left", 1, 20, 10, 10},
		{"spawned, 7 left", 2, 7, 3, 4},
		{"spawned, 1 left", 1, 1, 0, 1},
		{"spawned, none left", 1, 0, 0, 0},
		{"spawned, overdrawn", 1, -3, 0, -3},
		{"top level", 0, 0, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ChatInput{ConversationID: "c", Text: "hi", Parent: "p", Depth: tt.depth}
			if tt.depth > 0 {
				in.Spawns = actors.NewSpawnBudget(int(tt.left))
			}
			e, err := decodeEnvelope((&envelope{Op: opChat, Req: "r", ReplyAddr: "a", ReplyID: "b", Chat: forwarded(in)}).message().Value)
			if err != nil {
				t.Fatal(err)
			}
			there := e.Chat.input("c", maxSpawns)
			if there.Depth != tt.depth || there.Parent != "p" || there.Text != "hi" || !there.local {
				t.Fatalf("input there %+v", there)
			}
			switch {
			case tt.wantShare < 0 && there.Spawns != nil:
				t.Fatalf("a top-level chat brought a budget of %d", there.Spawns.Left())
			case tt.wantShare >= 0 && (there.Spawns == nil || there.Spawns.Left() != tt.wantShare):
				t.Fatalf("budget there %v, want %d", there.Spawns, tt.wantShare)
			}
			if tt.depth > 0 && in.Spawns.Left() != tt.wantLeft {
				t.Fatalf("left here %d, want %d", in.Spawns.Left(), tt.wantLeft)
			}
		})
	}
	t.Run("share capped, or none from an older node", func(t *testing.T) {
		big := int64(1000)
		if got := (&fwdChat{Depth: 1, Spawns: &big}).input("c", maxSpawns).Spawns.Left(); got != maxSpawns {
			t.Fatalf("a share of 1000 runs with %d, want the node's %d", got, maxSpawns)
		}
		if got := (&fwdChat{Depth: 1}).input("c", maxSpawns).Spawns.Left(); got != 0 {
			t.Fatalf("a spawned chat without a share runs with %d, want 0", got)
		}
	})
}

// TestRelayedInputRefusal: a chat refused by the node owning its
// conversation because its input had no room there ([loop]
// chat_input_mb_per_hour) reaches the client through the node that took
// it with the owner's Retry-After, not the 1 s of a busy slot, and with a
// message that names the chat once. Before, it said Retry-After: 1 while
// its message said the input had room in minutes, and "chat c: chat c:".
func TestRelayedInputRefusal(t *testing.T) {
	now := time.Now()
	owner := &Node{cfg: Config{NodeID: "b"}, chatInput: newInputBudget(1, minChatInputBurstMB), now: func() time.Time { return now }}
	client := &ChatClient{Endpoint: "/v1/chat"}
	var refusal error
	for i := 0; refusal == nil; i++ {
		if i > 2*minChatInputBurstMB {
			t.Fatal("the owner's budget never refused a chat")
		}
		if err := owner.takeChatInput(ChatInput{ConversationID: "c", Text: strings.Repeat("x", 1<<20), Client: client}); err != nil {
			refusal = notStarted{fmt.Errorf("chat c: %w", err)} // as Converse refuses it
		}
	}
	ownWait := retryAfterSeconds(refusal)
	if ownWait == "1" {
		t.Fatalf("the owner's own Retry-After is %s: want the minutes the input needs", ownWait)
	}
	for _, tc := range []struct {
		name  string
		err   error
		retry string
	}{
		{"input refused", refusal, ownWait},
		{"busy slot", notStarted{fmt.Errorf("chat c: %w", ErrTooManyChats)}, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(&envelope{Op: opAnswer, Req: "r", Error: owner.remoteChatError("c", tc.err)})
			if err != nil {
				t.Fatal(err)
			}
			e, err := decodeEnvelope(b)
			if err != nil {
				t.Fatal(err)
			}
			relayed := relayedChatError("c", e.Error)
			if code, _ := chatErrorStatus(relayed); code != 429 || !refusedBeforeStart(relayed) {
				t.Fatalf("relayed as %d (refused before start %v), want 429 before start", code, refusedBeforeStart(relayed))
			}
			if got := retryAfterSeconds(relayed); got != tc.retry {
				t.Fatalf("relayed Retry-After %s, want the owner's %s", got, tc.retry)
			}
			if msg := relayed.Error(); strings.Count(msg, "chat c:") != 1 || !strings.HasSuffix(msg, "(on node b)") {
				t.Fatalf("relayed message %q: want the chat named once and the owner named", msg)
			}
		})
	}
}
