package orchestrator

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// BenchmarkFirstChunk measures a streamed POST /v1/chat/completions from
// sending the request to reading its first SSE chunk, over loopback, with a
// model that answers at once.
func BenchmarkFirstChunk(b *testing.B) {
	instant := funcProvider(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}}, nil
	})
	_, base, token := startAPI(b, nil, Options{Provider: instant})
	body := `{"model":"evoclaw","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "data: {") {
			b.Fatalf("first line %q: %v", line, err)
		}
		b.StopTimer()
		resp.Body.Close()
		b.StartTimer()
	}
}

// discardWriter is an http.ResponseWriter that flushes into nothing.
type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkStreamChunk measures what one streamed progress chunk costs the
// server: building it, encoding it and writing it as an SSE event.
func BenchmarkStreamChunk(b *testing.B) {
	w := &discardWriter{h: http.Header{}}
	sw := newSSEWriter(w)
	p := actors.Progress{Kind: actors.ProgressToolEnd, ConversationID: "oai-0123456789abcdef01234567", Time: time.Now(), Iteration: 1,
		CallID: "call_1", RequestID: "req-1", Agent: "pi-1", Tool: "sysinfo", Status: "success", Result: strings.Repeat("r", 200), ElapsedMS: 42}
	b.ReportAllocs()
	for b.Loop() {
		sw.event("", CompletionChunk{ID: "chatcmpl-1", Object: "chat.completion.chunk", Created: 1, Model: ModelEvoclaw,
			Choices: []ChunkChoice{{}}, ConversationID: p.ConversationID, Evoclaw: p})
	}
	b.ReportMetric(float64(w.n)/float64(b.N), "bytes/chunk")
}
