package resilient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/openai"
)

// slowServer answers chat completions after delay(n) for the n-th request
// (from 1), like a local server that loads its model on the first one.
func slowServer(t *testing.T, delay func(n int64) time.Duration) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		select {
		case <-time.After(delay(i)):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c%d","model":"tiny","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello %d"}}]}`, i, i)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// The first call waits for a model load longer than the per-call timeout
// but within the load timeout; later calls are bound by the per-call
// timeout again.
func TestColdStartUsesLoadTimeout(t *testing.T) {
	const load = 400 * time.Millisecond
	s, _ := slowServer(t, func(n int64) time.Duration {
		if n == 1 || n == 3 {
			return load
		}
		return 0
	})
	p := openai.New(openai.Options{BaseURL: s.URL + "/v1"})
	c, _ := New([]Link{{Provider: p, Model: "tiny", Timeout: 100 * time.Millisecond, LoadTimeout: 5 * time.Second}}, Options{})
	ctx := context.Background()
	if r, err := c.Complete(ctx, req()); err != nil || r.Message.Content != "hello 1" {
		t.Fatalf("cold call: %+v %v", r, err)
	}
	if r, err := c.Complete(ctx, req()); err != nil || r.Message.Content != "hello 2" {
		t.Fatalf("warm call: %+v %v", r, err)
	}
	_, err := c.Complete(ctx, req())
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindTimeout || !strings.Contains(e.Message, "per-call timeout 100ms") {
		t.Fatalf("slow warm call: %v, want the per-call timeout", err)
	}
}

// Without a load timeout a cold start is an ordinary timeout that names
// the load.
func TestColdStartTimeoutNamesLoad(t *testing.T) {
	s, _ := slowServer(t, func(int64) time.Duration { return 300 * time.Millisecond })
	p := openai.New(openai.Options{BaseURL: s.URL + "/v1"})
	c, _ := New([]Link{{Provider: p, Model: "tiny", Timeout: 50 * time.Millisecond, LoadTimeout: 100 * time.Millisecond}}, Options{})
	_, err := c.Complete(context.Background(), req())
	if llm.KindOf(err) != llm.KindTimeout || !strings.Contains(err.Error(), "load timeout 100ms") {
		t.Fatalf("err = %v", err)
	}
}

// A network failure (the server restarted) makes every link of that server
// cold again, and the first answer afterwards calls OnWarm.
func TestRestartMakesLinksCold(t *testing.T) {
	var mu sync.Mutex
	down := false
	var warmed atomic.Int64
	f := &fake{name: "p", fn: func(ctx context.Context, r llm.Request) (llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return llm.Response{}, &llm.Error{Kind: llm.KindNetwork, Provider: "p", Message: "connection refused"}
		}
		dl, _ := ctx.Deadline()
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprint(time.Until(dl) > time.Minute)}}, nil
	}}
	lim := NewLimiter(1, 4)
	c, _ := New([]Link{
		{Provider: f, Model: "a", Timeout: time.Minute, LoadTimeout: time.Hour, Limiter: lim, OnWarm: func() { warmed.Add(1) }},
		{Provider: f, Model: "b", Timeout: time.Minute, LoadTimeout: time.Hour, Limiter: lim},
	}, Options{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	ctx := context.Background()
	long := func() string {
		r, err := c.Complete(ctx, req())
		if err != nil {
			t.Fatal(err)
		}
		return r.Message.Content
	}
	if long() != "true" || long() != "false" {
		t.Fatal("first call must get the load timeout, the second the per-call timeout")
	}
	if warmed.Load() != 0 {
		t.Fatal("OnWarm on the first success: that is a start, not a reconnect")
	}
	mu.Lock()
	down = true
	mu.Unlock()
	if _, err := c.Complete(ctx, req()); llm.KindOf(err) != llm.KindNetwork {
		t.Fatalf("err = %v", err)
	}
	for _, l := range c.links {
		if l.warm.Load() {
			t.Fatalf("link %s still warm after its server failed", l.Model)
		}
	}
	mu.Lock()
	down = false
	mu.Unlock()
	if long() != "true" || warmed.Load() != 1 {
		t.Fatalf("after the restart: want the load timeout and one OnWarm, got %d", warmed.Load())
	}
}

func TestWarmUp(t *testing.T) {
	var got llm.Request
	f := &fake{name: "p", fn: func(_ context.Context, r llm.Request) (llm.Response, error) {
		got = r
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "hi"}}, nil
	}}
	var attempts atomic.Int64
	c, _ := New([]Link{{Provider: f, Model: "m", LoadTimeout: time.Hour}}, Options{OnAttempt: func(Attempt) { attempts.Add(1) }})
	if err := c.WarmUp(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got.Model != "m" || got.MaxTokens != 1 || len(got.Messages) != 1 || !c.links[0].warm.Load() || attempts.Load() != 0 {
		t.Fatalf("warm-up sent %+v; warm %v; attempts %d", got, c.links[0].warm.Load(), attempts.Load())
	}
	if err := c.WarmUp(context.Background(), 3); err == nil {
		t.Fatal("warm-up of a missing link")
	}
}

func TestBackgroundOwned(t *testing.T) {
	c, _ := New([]Link{{Provider: answers("p")}}, Options{})
	stopped := make(chan struct{})
	if !c.Go(func(ctx context.Context) { <-ctx.Done(); close(stopped) }) {
		t.Fatal("Go refused before Close")
	}
	c.Close()
	select {
	case <-stopped:
	default:
		t.Fatal("Close returned before the goroutine ended")
	}
	c.Close()
	if c.Go(func(context.Context) {}) {
		t.Fatal("Go ran after Close")
	}
}

// A model idle for longer than ColdAfter may have been unloaded: the next
// attempt gets the load timeout again.
func TestIdleLinkTurnsCold(t *testing.T) {
	clk := newClock()
	f := &fake{name: "p", fn: func(ctx context.Context, r llm.Request) (llm.Response, error) {
		dl, _ := ctx.Deadline()
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprint(time.Until(dl) > time.Minute)}}, nil
	}}
	c, _ := New([]Link{{Provider: f, Model: "m", Timeout: time.Minute, LoadTimeout: time.Hour, ColdAfter: 5 * time.Minute}}, Options{Now: clk.Now})
	got := func() string {
		r, err := c.Complete(context.Background(), req())
		if err != nil {
			t.Fatal(err)
		}
		return r.Message.Content
	}
	if got() != "true" || got() != "false" {
		t.Fatal("cold then warm expected")
	}
	clk.advance(4 * time.Minute)
	if got() != "false" {
		t.Fatal("cold again within ColdAfter")
	}
	clk.advance(6 * time.Minute)
	if got() != "true" {
		t.Fatal("still warm after ColdAfter idle")
	}
}

// TestTimeoutSaysSlowStuckOrSilent: a per-call or load timeout that cuts
// a streamed answer while it still arrives says so, how far it got, and
// that a longer timeout lets it finish; one whose answer stopped for
// longer than the idle timeout while keep-alive lines held the connection
// says the model may be stuck; one that passes before any chunk says
// there was no answer. Before, all said "no answer within the per-call
// timeout", and a Pi writing a long answer at two tokens a second looked
// like a hung server.
func TestTimeoutSaysSlowStuckOrSilent(t *testing.T) {
	chunk := llmtest.Step{Wait: 20 * time.Millisecond, Text: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"}
	slow := make([]llmtest.Step, 100)
	for i := range slow {
		slow[i] = chunk
	}
	stuck := append([]llmtest.Step{chunk}, llmtest.Heartbeats(100, 20*time.Millisecond)...)
	for _, c := range []struct {
		name    string
		steps   []llmtest.Step
		idle    time.Duration // the provider's idle timeout
		load    time.Duration // the link's LoadTimeout
		want    []string
		partial bool
	}{
		{"slow stream", slow, time.Second, 0, []string{"answer not complete within the per-call timeout 300ms", "the answer was still arriving", "a longer timeout lets it finish"}, true},
		{"slow stream, cold", slow, time.Second, 400 * time.Millisecond, []string{"answer not complete within the load timeout 400ms", "the answer was still arriving"}, true},
		{"stuck behind keep-alives", stuck, 100 * time.Millisecond, 0, []string{"answer not complete within the per-call timeout 300ms", "only keep-alive lines: the model may be stuck"}, true},
		{"silent stream", nil, time.Second, 0, []string{"no answer within the per-call timeout 300ms"}, false},
		{"silent stream, cold", nil, time.Second, 400 * time.Millisecond, []string{"no answer within the load timeout 400ms (first call"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := llmtest.Script(t, c.steps...)
			p := openai.New(openai.Options{BaseURL: s.URL + "/v1", Stream: true, IdleTimeout: c.idle})
			ch, _ := New([]Link{{Provider: p, Model: "tiny", Timeout: 300 * time.Millisecond, LoadTimeout: c.load}}, Options{})
			_, err := ch.Complete(context.Background(), req())
			if llm.KindOf(err) != llm.KindTimeout {
				t.Fatalf("err = %v, want a timeout", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
			if errors.Is(err, httpc.ErrPartialAnswer) != c.partial || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v: ErrPartialAnswer %v, want %v; DeadlineExceeded %v, want true", err, errors.Is(err, httpc.ErrPartialAnswer), c.partial, errors.Is(err, context.DeadlineExceeded))
			}
		})
	}
}
