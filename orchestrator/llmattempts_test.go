package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// labelledProvider is a funcProvider with a name of its own.
type labelledProvider struct {
	name string
	f    funcProvider
}

func (p labelledProvider) Name() string { return p.name }
func (p labelledProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return p.f(ctx, req)
}

// TestFailedAttemptsAreAudited: a completion a retry or a fallback answered
// leaves a row in llm_calls for each exchange that failed before it, in
// order, then the answer's; before, the trail showed only the answer, so
// that a primary model failing on every call looked healthy.
func TestFailedAttemptsAreAudited(t *testing.T) {
	tries := 0
	primary := labelledProvider{"primary", func(context.Context, llm.Request) (llm.Response, error) {
		tries++
		return llm.Response{}, &llm.Error{Kind: llm.KindServer, Provider: "primary", Status: 503, Message: "model unloaded"}
	}}
	fallback := labelledProvider{"fallback", func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "hello"}, Model: "small-1"}, nil
	}}
	chain, err := resilient.New([]resilient.Link{
		{Provider: primary, Model: "big", Retries: 1, Timeout: time.Minute},
		{Provider: fallback, Model: "small", Timeout: time.Minute},
	}, resilient.Options{Backoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	node, base, token := startAPI(t, nil, Options{Provider: chain})
	resp := send(t, "POST", base+"/v1/chat/completions", token, completion("hi"))
	wantStatus(t, resp, 200)
	conv := resp.Header.Get(ConversationHeader)
	resp.Body.Close()
	got := auditRows(t, node.AuditPath(), "SELECT provider, model, status, coalesce(error_type, '-'), iteration FROM llm_calls WHERE conversation_id = '"+conv+"' ORDER BY chain_seq")
	want := "[[primary big error server 0] [primary big error server 0] [fallback small-1 success - 0]]"
	if tries != 2 || got != want {
		t.Fatalf("%d tries of the primary; llm_calls rows %s, want %s", tries, got, want)
	}
}
