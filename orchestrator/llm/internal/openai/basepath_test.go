package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// v1Server answers as Ollama and llama.cpp do: the API below /v1 only, a
// plain 404 elsewhere (its body notFound), and a JSON 404 for an unknown
// model.
func v1Server(t *testing.T, notFound string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		switch {
		case r.URL.Path != "/v1/chat/completions":
			http.Error(w, notFound, http.StatusNotFound)
		case req.Model == "missing":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"model \"missing\" not found, try pulling it first","type":"api_error"}}`)
		case req.Model == "refused":
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		case req.Stream:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

var tryRE = regexp.MustCompile(`try "([^"]+)"`)

// TestBaseURLWithoutV1IsHinted: a 404 for the chat completions path from a
// base_url without /v1 (Ollama at :11434, llama.cpp at :8080) names the
// address to try, and that address answers; a 404 or 400 that /v1 would
// not cure is left as the server said it. Before, the call failed with
// only "bad_request (HTTP 404): 404 page not found".
func TestBaseURLWithoutV1IsHinted(t *testing.T) {
	long := strings.Repeat("no such path ", 80<<10) // ~1 MiB
	for _, tt := range []struct {
		name     string
		path     string // appended to the server's URL
		model    string
		stream   bool
		notFound string
		hint     bool
		status   int
	}{
		{"no v1", "", "m", false, "404 page not found", true, 404},
		{"no v1, trailing slash", "/", "m", false, "404 page not found", true, 404},
		{"no v1, streamed", "", "m", true, "404 page not found", true, 404},
		{"no v1, long body", "", "m", false, long, true, 404},
		{"v1, unknown model", "/v1", "missing", false, "", false, 404},
		{"v1, not a 404", "/v1", "refused", false, "", false, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := v1Server(t, tt.notFound)
			p := New(Options{BaseURL: srv.URL + tt.path, Model: tt.model, Stream: tt.stream})
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
			_, err := p.Complete(context.Background(), req)
			var e *llm.Error
			if !errors.As(err, &e) || e.Status != tt.status {
				t.Fatalf("err = %v, want an *llm.Error with status %d", err, tt.status)
			}
			msg := err.Error()
			if len(msg) > llm.MaxErrorExcerpt+1024 {
				t.Errorf("error of %d bytes: the server's body is not bounded", len(msg))
			}
			m := tryRE.FindStringSubmatch(msg)
			if (m != nil) != tt.hint {
				t.Fatalf("hint given: %v, want %v: %s", m != nil, tt.hint, msg)
			}
			if m == nil {
				return
			}
			hinted := New(Options{BaseURL: m[1], Model: tt.model, Stream: tt.stream})
			resp, err := hinted.Complete(context.Background(), req)
			if err != nil || resp.Message.Content != "ok" {
				t.Errorf("the hinted base_url %q: %v, %+v", m[1], err, resp.Message)
			}
		})
	}
}

// FuzzHintV1: any base_url and server message give a bounded error and
// never a panic.
func FuzzHintV1(f *testing.F) {
	f.Add("http://127.0.0.1:11434", "404 page not found")
	f.Add("http://h:8080/v1", "model not found")
	f.Add("::%zz", "")
	f.Add(strings.Repeat("x", 4096), strings.Repeat("y", 600))
	f.Fuzz(func(t *testing.T, base, msg string) {
		in := &llm.Error{Kind: llm.KindBadRequest, Status: 404, Message: llm.Excerpt(msg, llm.MaxErrorExcerpt)}
		before := len(in.Message)
		var e *llm.Error
		if !errors.As(hintV1(in, base), &e) {
			t.Fatal("the error was lost")
		}
		if len(e.Message) > before+1024 {
			t.Fatalf("message grew by %d bytes", len(e.Message)-before)
		}
	})
}
