package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// gatedProvider answers a completion when release is closed (or its
// context ends); started counts the completions that began.
type gatedProvider struct {
	release chan struct{}
	mu      sync.Mutex
	started int
}

func (*gatedProvider) Name() string { return "gated" }
func (g *gatedProvider) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	g.mu.Lock()
	g.started++
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
		return llm.Response{}, &llm.Error{Kind: llm.KindCanceled, Provider: "gated", Err: ctx.Err()}
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "late"}}, nil
}

// TestStreamRefusedByFullLLMQueue: with the LLM server's queue full
// ([llm] max_concurrent = 1, max_queued = 1, two slow chats holding both),
// a streamed chat is refused as an unstreamed one is: 429, Retry-After and
// the error body, not 200 and an error event. On both chat endpoints. The
// chat is refused before it starts: a new one names no conversation.
func TestStreamRefusedByFullLLMQueue(t *testing.T) {
	gate := &gatedProvider{release: make(chan struct{})}
	lim := resilient.NewLimiter(1, 1)
	chain, err := resilient.New([]resilient.Link{{Provider: gate, Model: "m", Limiter: lim, Timeout: time.Minute}},
		resilient.Options{FailureThreshold: 1000})
	if err != nil {
		t.Fatal(err)
	}
	_, base, token := startAPI(t, nil, Options{Provider: chain})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp := send(t, "POST", base+"/v1/chat/completions", token, completion("slow"))
			resp.Body.Close()
		})
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(gate.release)
			wg.Wait()
		}
	}
	defer release()
	testenv.Eventually(t, 10*time.Second, func() bool { return lim.InFlight() == 1 && lim.Waiting() == 1 }, "two slow chats hold the queue")

	for _, tt := range []struct {
		path string
		body any
	}{
		{"/v1/chat/completions", with(completion("x"), "stream", true)},
		{"/v1/chat", ChatRequest{Text: "x", Stream: true}},
		{"/v1/chat", ChatRequest{Text: "x", ConversationID: "busy-one"}},
		{"/v1/chat/completions", completion("x")},
	} {
		resp := send(t, "POST", base+tt.path, token, tt.body)
		var f ChatFailure // the completions' error body is its first field
		code, ctype, retry := resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After")
		decodeBody(t, resp, &f)
		if code != http.StatusTooManyRequests || retry != "1" || ctype != "application/json" || f.Error.Type != ErrTypeBusy {
			t.Errorf("%s %v: %d, Retry-After %q, %s, %+v; want 429 with Retry-After 1 and a rate_limit_error", tt.path, tt.body, code, retry, ctype, f.Error)
		}
		if req, ok := tt.body.(ChatRequest); ok && (f.Status != 429 || f.ConversationID != req.ConversationID ||
			f.ConversationID != resp.Header.Get(ConversationHeader)) {
			t.Errorf("%s %+v: failure %+v, %s %q; want the conversation asked for named, none for a new one",
				tt.path, req, f, ConversationHeader, resp.Header.Get(ConversationHeader))
		}
	}
	release()
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if gate.started != 2 {
		t.Fatalf("%d completions reached the provider, want the 2 slow ones", gate.started)
	}
}

// TestStreamShowsASlowFirstCompletion: the stream holds its first events
// back for a short while only; a completion that takes longer still shows
// its llm_start live, before it ends. On both chat endpoints.
func TestStreamShowsASlowFirstCompletion(t *testing.T) {
	for _, ep := range streamedChats() {
		t.Run(ep.path, func(t *testing.T) {
			gate := &gatedProvider{release: make(chan struct{})}
			_, base, token := startAPI(t, nil, Options{Provider: gate, keepAlive: 100 * time.Millisecond})
			resp := send(t, "POST", base+ep.path, token, ep.body)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			// The completion is still blocked: llm_start must arrive anyway.
			sc := bufio.NewScanner(resp.Body)
			sawStart := false
			for !sawStart && sc.Scan() {
				sawStart = strings.Contains(sc.Text(), `"kind":"`+actors.ProgressLLMStart+`"`)
			}
			if !sawStart {
				t.Fatal("no llm_start while the first completion runs")
			}
			close(gate.release)
			var rest strings.Builder
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
			if !strings.Contains(rest.String(), `"late"`) || !strings.Contains(rest.String(), `"kind":"llm_end"`) {
				t.Fatalf("rest of the stream:\n%s", rest.String())
			}
		})
	}
}

// TestStreamFailures: a chat that fails at once (the first completion
// fails, the conversation id is refused) answers its status, streamed or
// not; one that fails after it showed a step (a tool ran) ends its stream
// with an error event.
func TestStreamFailures(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	base, token := nodes.get("upstream")
	for _, tt := range []struct {
		path   string
		body   any
		status int
		typ    string
		param  string
	}{
		{"/v1/chat", ChatRequest{Text: "x", Stream: true}, 502, ErrTypeUpstream, ""},
		{"/v1/chat/completions", with(completion("x"), "stream", true), 502, ErrTypeUpstream, ""},
		{"/v1/chat", ChatRequest{Text: "x", ConversationID: "a/b", Stream: true}, 400, ErrTypeInvalidRequest, "conversation_id"},
	} {
		resp := send(t, "POST", base+tt.path, token, tt.body)
		var e errorBody
		code := resp.StatusCode
		decodeBody(t, resp, &e)
		if code != tt.status || e.Error.Type != tt.typ || deref(e.Error.Param) != tt.param {
			t.Errorf("%s %v: %d %+v; want %d %s param %q", tt.path, tt.body, code, e.Error, tt.status, tt.typ, tt.param)
		}
	}

	// One tool turn, then the transcript is exhausted: the LLM fails
	// after the stream showed the tool.
	const toolThenNothing = `{"name":"read","turns":[{"content":"","tool_calls":[{"id":"r1","name":"read","arguments":{"path":"notes.txt"}}]}]}`
	_, base, token = startAPI(t, workspace(t), Options{Provider: mustScript(t, toolThenNothing)})
	resp := send(t, "POST", base+"/v1/chat", token, ChatRequest{ConversationID: "fails", Text: "x", Stream: true})
	events := readSSE(t, resp.Body)
	resp.Body.Close()
	last := events[len(events)-1]
	var f ChatFailure
	if resp.StatusCode != 200 || events[0].name != EventConversation || last.name != EventError ||
		json.Unmarshal([]byte(last.data), &f) != nil || f.Status != 502 || f.ConversationID != "fails" || f.ToolCalls != 1 {
		t.Fatalf("status %d, events %+v", resp.StatusCode, events)
	}
	resp = send(t, "POST", base+"/v1/chat/completions", token, with(completion("x"), "stream", true))
	cs, raw := chunks(t, readSSE(t, resp.Body))
	resp.Body.Close()
	var e errorBody
	if resp.StatusCode != 200 || len(cs) < 2 || json.Unmarshal([]byte(raw[len(raw)-1]), &e) != nil || e.Error.Type != ErrTypeUpstream {
		t.Fatalf("status %d, events %v", resp.StatusCode, raw)
	}
	for _, r := range raw {
		if r == "[DONE]" {
			t.Fatal("a failed stream sent [DONE]")
		}
	}
}
