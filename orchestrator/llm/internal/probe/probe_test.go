package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

func TestRecordedServers(t *testing.T) {
	tests := []struct {
		name, model string
		pairs       []string
		want        Capabilities
	}{
		{"ollama with tools", "qwen2.5:1.5b", []string{"ollama_models.json", "ollama_show_tools.json"},
			Capabilities{Server: ServerOllama, Listed: true, ContextTokens: 8192, TrainedContext: 32768, Tools: ToolsNative, Sources: []string{"/models", "/api/show"}}},
		{"ollama without tools", "gemma2:2b", []string{"ollama_models.json", "ollama_show_no_tools.json"},
			Capabilities{Server: ServerOllama, Listed: true, ContextTokens: OllamaDefaultContext, TrainedContext: 8192, Tools: ToolsNone, Sources: []string{"/models", "/api/show"}}},
		{"llama.cpp", "whatever", []string{"llamacpp_models.json", "llamacpp_props.json"},
			Capabilities{Server: ServerLlamaCpp, ContextTokens: 4096, TrainedContext: 32768, Tools: ToolsNative, Sources: []string{"/models", "/props"}}},
		{"llama.cpp template without tools", "tinyllama", []string{"llamacpp_models.json", "llamacpp_props_no_tools.json"},
			Capabilities{Server: ServerLlamaCpp, ContextTokens: 2048, TrainedContext: 32768, Tools: ToolsNone, Sources: []string{"/models", "/props"}}},
		{"ollama vision model", "gemma3:4b", []string{"ollama_models.json", "ollama_show_vision.json"},
			Capabilities{Server: ServerOllama, Listed: true, ContextTokens: 8192, TrainedContext: 131072, Tools: ToolsNone, Vision: true, Sources: []string{"/models", "/api/show"}}},
		{"llama.cpp with a projector", "whatever", []string{"llamacpp_models.json", "llamacpp_props_vision.json"},
			Capabilities{Server: ServerLlamaCpp, ContextTokens: 8192, TrainedContext: 32768, Tools: ToolsNative, Vision: true, Sources: []string{"/models", "/props"}}},
		{"vllm", "Qwen/Qwen2.5-1.5B-Instruct", []string{"vllm_models.json"},
			Capabilities{Server: ServerVLLM, Listed: true, ContextTokens: 16384, Tools: ToolsUnknown, Sources: []string{"/models"}}},
		{"lm studio", "qwen2.5-7b-instruct", []string{"lmstudio_models.json", "not_found.json", "not_found.json"},
			Capabilities{Server: ServerUnknown, Listed: true, Tools: ToolsUnknown, Sources: []string{"/models"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.ServeFiles(t, "probe", tt.pairs...)
			got, err := Probe(context.Background(), Options{BaseURL: s.URL + "/v1", Model: tt.model})
			if err != nil {
				t.Fatal(err)
			}
			if got.Server != tt.want.Server || got.Listed != tt.want.Listed || got.ContextTokens != tt.want.ContextTokens ||
				got.TrainedContext != tt.want.TrainedContext || got.Tools != tt.want.Tools || got.Vision != tt.want.Vision || !slices.Equal(got.Sources, tt.want.Sources) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			if s.Requests() != len(tt.pairs) {
				t.Fatalf("%d requests, want %d", s.Requests(), len(tt.pairs))
			}
		})
	}
}

func TestNothingAnswers(t *testing.T) {
	nf := llmtest.Load(t, "probe/not_found.json")
	s := llmtest.Serve(t, nf, nf, nf)
	_, err := Probe(context.Background(), Options{BaseURL: s.URL + "/v1", Model: "m"})
	if !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("err = %v", err)
	}
}

// A server that never answers holds the probe only as long as its context.
func TestProbeBoundedByContext(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Probe(ctx, Options{BaseURL: s.URL + "/v1", Model: "m"}); err == nil {
		t.Fatal("probe of a silent server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("probe took %s", d)
	}
}

// Oversized and malformed answers are skipped, not fatal.
func TestBadAnswers(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			w.Write(make([]byte, MaxBody+10))
		case "/api/show":
			w.Write([]byte(`{"capabilities": "tools"`))
		default:
			w.Write([]byte(`{"default_generation_settings": {"n_ctx": 1024}}`))
		}
	}))
	defer s.Close()
	got, err := Probe(context.Background(), Options{BaseURL: s.URL + "/v1", Model: "m"})
	if err != nil || got.ContextTokens != 1024 || got.Server != ServerLlamaCpp || !slices.Equal(got.Sources, []string{"/props"}) {
		t.Fatalf("got %+v err %v", got, err)
	}
}
