package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestChatsCutByTheNodeStoppingSaySo: chats in flight when the node
// stops, on every chat endpoint, streamed or not, fail as the node's doing
// (503, not_ready_error, "the node is stopping"), not as a client that went
// away (499 canceled, what they said before: the client had not).
func TestChatsCutByTheNodeStoppingSaySo(t *testing.T) {
	started := make(chan struct{}, 8)
	node, base, token := startAPI(t, nil, Options{Provider: funcProvider(func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		started <- struct{}{}
		<-ctx.Done() // a model that takes longer than the node runs
		return llm.Response{}, ctx.Err()
	})})
	type result struct {
		name string
		code int
		body string
	}
	cases := []struct {
		name, path string
		body       any
	}{
		{"chat", "/v1/chat", ChatRequest{Text: "hi"}},
		{"chat streamed", "/v1/chat", ChatRequest{Text: "hi", Stream: true}},
		{"chat completions", "/v1/chat/completions", map[string]any{"model": "evoclaw", "messages": []map[string]string{{"role": "user", "content": "hi"}}}},
		{"chat completions streamed", "/v1/chat/completions", map[string]any{"model": "evoclaw", "stream": true, "messages": []map[string]string{{"role": "user", "content": "hi"}}}},
	}
	results := make(chan result, len(cases))
	for _, tc := range cases {
		go func() {
			b, _ := json.Marshal(tc.body)
			req, _ := http.NewRequest(http.MethodPost, base+tc.path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- result{tc.name, 0, err.Error()}
				return
			}
			defer resp.Body.Close()
			var out strings.Builder
			sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
			}
			results <- result{tc.name, resp.StatusCode, out.String()}
		}()
	}
	for range cases {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("not every chat reached the model")
		}
	}
	if err := node.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	for range cases {
		r := <-results
		// A streamed chat answered 200 before it failed; its error is in
		// the stream.
		if r.code != http.StatusServiceUnavailable && r.code != http.StatusOK {
			t.Errorf("%s: status %d, want 503 (or 200 and the error in the stream): %s", r.name, r.code, r.body)
		}
		if !strings.Contains(r.body, ErrTypeNotReady) || !strings.Contains(r.body, "the node is stopping") || strings.Contains(r.body, `"type":"`+ErrTypeCanceled+`"`) {
			t.Errorf("%s: %d %s, want %s saying the node is stopping", r.name, r.code, r.body, ErrTypeNotReady)
		}
	}
}
