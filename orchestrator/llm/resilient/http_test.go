package resilient

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/openai"
)

func req() llm.Request {
	return llm.Request{Model: "from-config", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Check the CPU temperature"}}}
}

func modelOf(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Model
}

// A real 429 with Retry-After from a server, then the recorded success.
func TestHTTPRateLimitThenSuccess(t *testing.T) {
	s := llmtest.Serve(t, llmtest.Load(t, "openai/rate_limited.json"), llmtest.Load(t, "openai/text_answer.json"))
	clk := newClock()
	p := openai.New(openai.Options{BaseURL: s.URL + "/v1", Now: clk.Now})
	c, _ := New([]Link{{Provider: p, Model: "gpt-4o-mini", Retries: 2}}, opts(clk))
	r, err := c.Complete(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "The CPU is at 45.6 °C." || r.Attempts != 2 || s.Requests() != 2 {
		t.Fatalf("r = %+v, requests %d", r, s.Requests())
	}
	if got := clk.slept(); len(got) != 1 || got[0] != 7*time.Second {
		t.Fatalf("waits = %v, want the server's Retry-After of 7s", got)
	}
}

// Three 500s exhaust the primary model's retries; the fallback model on the
// same server answers, and both share one limiter.
func TestHTTPServerErrorsThenFallbackModel(t *testing.T) {
	fail := llmtest.Load(t, "openai/server_error.json")
	s := llmtest.Serve(t, fail, fail, fail, llmtest.Load(t, "openai/text_answer.json"))
	clk := newClock()
	p := openai.New(openai.Options{BaseURL: s.URL + "/v1"})
	lim := NewLimiter(1, 4)
	c, _ := New([]Link{
		{Provider: p, Model: "qwen2.5:7b", Retries: 2, Limiter: lim},
		{Provider: p, Model: "qwen2.5:1.5b", Limiter: lim},
	}, opts(clk))
	r, err := c.Complete(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 4 || r.Provider != "openai" || r.Model != "tinyllama" {
		t.Fatalf("r = %+v", r)
	}
	for i, want := range []string{"qwen2.5:7b", "qwen2.5:7b", "qwen2.5:7b", "qwen2.5:1.5b"} {
		if got := modelOf(t, s.Body(i)); got != want {
			t.Errorf("request %d asked for %q, want %q", i+1, got, want)
		}
	}
	if h := c.Health(); h[0].ConsecutiveFailures != 1 || h[0].LastKind != llm.KindServer || h[1].ConsecutiveFailures != 0 {
		t.Fatalf("health = %+v", h)
	}
}
