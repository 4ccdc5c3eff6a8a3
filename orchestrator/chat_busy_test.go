package orchestrator

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// TestChatsRefusedBusyWriteNothing: with the model's queue full, a chat is
// refused 429 before it starts, on both endpoints, streamed or not: it
// writes nothing to the audit trail, and the refusals log a bounded number
// of lines. Refused only at its first call, each chat wrote its message and
// the failed call (about 1 KB) and two log lines, at the speed of HTTP: a
// client retrying in a loop wrote 20 MB to the audit database and 9 MB of
// log in 10 s.
func TestChatsRefusedBusyWriteNothing(t *testing.T) {
	gate := &gatedProvider{release: make(chan struct{})}
	lim := resilient.NewLimiter(1, 1)
	var logs testenv.Buffer
	chain, err := resilient.New([]resilient.Link{{Provider: gate, Model: "m", Limiter: lim, Timeout: time.Minute}},
		resilient.Options{FailureThreshold: 1000, Logger: logs.Logger(slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	_, base, token := startAPI(t, nil, Options{Provider: chain, Logger: logs.Logger(slog.LevelInfo)})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(gate.release)
	for range 2 {
		wg.Go(func() {
			resp := send(t, "POST", base+"/v1/chat/completions", token, completion("slow"))
			resp.Body.Close()
		})
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return lim.InFlight() == 1 && lim.Waiting() == 1 }, "two slow chats hold the queue")
	records := func() float64 {
		var res AuditSQLResult
		decodeBody(t, send(t, "POST", base+"/v1/audit/sql", token,
			map[string]any{"sql": "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM llm_calls) + (SELECT count(*) FROM conversations)"}), &res)
		if len(res.Rows) != 1 {
			t.Fatalf("count of records: %+v", res)
		}
		return res.Rows[0][0].(float64)
	}
	before := records()
	bodies := []struct {
		path string
		body any
	}{
		{"/v1/chat/completions", completion("x")},
		{"/v1/chat/completions", with(completion("x"), "stream", true)},
		{"/v1/chat", ChatRequest{Text: "x"}},
		{"/v1/chat", ChatRequest{Text: "x", Stream: true}},
		{"/v1/chat", ChatRequest{Text: "x", ConversationID: "busy-one"}},
	}
	const refusals = 100
	for i := range refusals {
		b := bodies[i%len(bodies)]
		resp := send(t, "POST", base+b.path, token, b.body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %+v with the queue full: %d, Retry-After %q; want 429 with Retry-After", b.path, b.body, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if after := records(); after != before {
		t.Errorf("%d chats refused busy wrote %v records to the audit trail (%v before, %v after), want none", refusals, after-before, before, after)
	}
	out := logs.String()
	if n := strings.Count(out, `msg="chat refused"`); n > busyLogBurst {
		t.Errorf("%d chats refused busy logged %d lines, want at most %d", refusals, n, busyLogBurst)
	}
	if n := strings.Count(out, `msg="llm link failed"`); n > 0 {
		t.Errorf("%d chats refused busy logged %d failed calls, want none (none was tried)", refusals, n)
	}
}
