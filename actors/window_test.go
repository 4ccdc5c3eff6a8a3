package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

func TestWindow(t *testing.T) {
	big := strings.Repeat("x", 1000)
	u := func(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }
	a := func(s string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: s} }
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}}}
	res := llm.Message{Role: llm.RoleTool, ToolCallID: "1", Name: "t", Content: big}
	roles := func(h []llm.Message) string {
		var out []string
		for _, m := range h {
			out = append(out, m.Role[:1]+fmt.Sprint(len(m.Content)/1000))
		}
		return strings.Join(out, " ")
	}
	size := u(big).Size()
	for _, c := range []struct {
		name    string
		history []llm.Message
		max     int
		want    string
	}{
		{"within", []llm.Message{u(big), a(big)}, 2 * size, "u1 a1"},
		{"oldest exchange left out", []llm.Message{u(big), a(big), u(big), a(big)}, 3 * size, "u1 a1"},
		{"cut only before a user message", []llm.Message{u(big), call, res, res, u(big), call, res}, 4 * size, "u1 a0 t1"},
		{"the last exchange whole, even past the bound", []llm.Message{u(big), a(big), u(big), call, res, call, res}, 2 * size, "u1 a0 t1 a0 t1"},
		{"no user message to cut at", []llm.Message{a(big), a(big), a(big)}, size, "a1 a1 a1"},
		{"one exchange", []llm.Message{u(big), call, res, call, res}, size, "u1 a0 t1 a0 t1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := roles(Window(c.history, c.max)); got != c.want {
				t.Fatalf("window = %s, want %s", got, c.want)
			}
		})
	}
}

// measuring is a provider that keeps the largest history it was sent and
// answers with turn(req, n) for its n-th request.
type measuring struct {
	turn    func(req llm.Request, n int) llm.Message
	mu      sync.Mutex // guards n and largest
	n       int
	largest int
}

func (p *measuring) Name() string { return "measuring" }

func (p *measuring) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.largest = max(p.largest, historyBytes(req.Messages))
	p.n++
	return llm.Response{Message: p.turn(req, p.n)}, nil
}

// oneLargeCall answers every request that offers tools with one echo call
// of 30 KB, and the others with text.
func oneLargeCall(req llm.Request, n int) llm.Message {
	if len(req.Tools) == 0 {
		return llm.Message{Role: llm.RoleAssistant, Content: "from what I have"}
	}
	args, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("%d %s", n, strings.Repeat("y", 30_000))})
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("c", n), Name: "pi-1__echo", Arguments: args}}}
}

// manyCalls asks for 64 calls in one turn, then answers.
func manyCalls(req llm.Request, _ int) llm.Message {
	if len(req.Tools) == 0 || req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
		return llm.Message{Role: llm.RoleAssistant, Content: "seen"}
	}
	var calls []llm.ToolCall
	for i := range MaxCallsPerTurn {
		calls = append(calls, llm.ToolCall{ID: fmt.Sprint("w", i), Name: "pi-1__echo", Arguments: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))})
	}
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}
}

// TestHistoryStaysWithinItsBound: a model that calls a tool with large
// results in chat after chat of one conversation (before: 38 MB of
// history a chat, all of it held and sent to the model every turn, a
// node's memory growing 80 MB a chat) ends each chat's tool use past
// MaxChatBytes and is sent at most MaxHistoryBytes of older history.
func TestHistoryStaysWithinItsBound(t *testing.T) {
	const hist, chat = 200 << 10, 100 << 10
	p := &measuring{turn: oneLargeCall}
	h := newHarness(t, echoTranscript, func(o *ConvOptions) {
		o.Provider, o.MaxHistoryBytes, o.MaxChatBytes, o.MaxIterations = p, hist, chat, 50
	})
	h.edge.onTool = echoReply(h)
	for i := range 8 {
		ans := h.chat(t, fmt.Sprint("chat ", i))
		if ans.Err != nil || !strings.Contains(ans.Limit, "size bound") || ans.Iterations > 2 {
			t.Fatalf("chat %d: err %v, limit %q after %d turns; want tool use ended by the size bound after 2 turns", i, ans.Err, ans.Limit, ans.Iterations)
		}
	}
	// Older history, the current chat, and the turn that passed its bound.
	const turn = 2 * 31_000
	if p.largest > hist+chat+turn {
		t.Fatalf("a request carried %d bytes of history, want at most %d", p.largest, hist+chat+turn)
	}
}

// TestOneTurnStaysWithinTheChatBound: one turn of 64 calls with large
// results (on a real node: 64 images, 41 MB of history from one turn)
// keeps results only until the chat's bound is passed; the rest are a
// notice each.
func TestOneTurnStaysWithinTheChatBound(t *testing.T) {
	const chat = 100 << 10
	p := &measuring{turn: manyCalls}
	h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.Provider, o.MaxChatBytes = p, chat })
	h.edge.onTool = func(cmd wire.Command, pl wire.ToolPayload) {
		h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: pl.Tool, Result: strings.Repeat("r", 30_000), RequestID: cmd.RequestID, ElapsedMS: 1})
	}
	if ans := h.chat(t, "go"); ans.Err != nil || ans.ToolCalls != MaxCallsPerTurn {
		t.Fatalf("answer: err %v after %d calls", ans.Err, ans.ToolCalls)
	}
	const slack = 30_000 + 64*400 // the result that passed the bound, and the notices
	if p.largest > chat+slack {
		t.Fatalf("the model was sent %d bytes of history, want at most %d", p.largest, chat+slack)
	}
}
