package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
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

// A probe answered with a redirect fails that step and sends nothing,
// key included, to where it points.
func TestRedirectNotFollowed(t *testing.T) {
	var followed atomic.Int32
	var key atomic.Value
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
		key.Store(r.Header.Get("Authorization"))
		w.Write([]byte(`{"data": [{"id": "m", "max_model_len": 4096}]}`))
	}))
	defer target.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+r.URL.Path, code)
		}))
		_, err := Probe(context.Background(), Options{BaseURL: s.URL + "/v1", Model: "m", APIKey: "sk-secret"})
		s.Close()
		if !errors.Is(err, ErrNoAnswer) {
			t.Errorf("%d: err = %v, want ErrNoAnswer", code, err)
		}
	}
	if n := followed.Load(); n != 0 {
		t.Fatalf("the redirects' target got %d requests (Authorization %q)", n, key.Load())
	}
}

// A context length the server reports is taken only when it is one: not
// negative, not zero, not past MaxContext; else the step reads as if the
// server did not say.
func TestContextLengthsBounded(t *testing.T) {
	tests := []struct {
		name, path, body string
		want, trained    int
	}{
		{"vllm huge", "/v1/models", `{"data": [{"id": "m", "owned_by": "vllm", "max_model_len": 1099511627776}]}`, 0, 0},
		{"vllm negative", "/v1/models", `{"data": [{"id": "m", "owned_by": "vllm", "max_model_len": -5}]}`, 0, 0},
		{"vllm at the bound", "/v1/models", `{"data": [{"id": "m", "owned_by": "vllm", "max_model_len": 16777216}]}`, MaxContext, 0},
		{"llama.cpp trained huge", "/v1/models", `{"data": [{"id": "m", "owned_by": "vllm", "max_model_len": 8192, "meta": {"n_ctx_train": 9007199254740993}}]}`, 8192, 0},
		{"ollama num_ctx huge", "/api/show", `{"capabilities": ["tools"], "parameters": "num_ctx 4294967296000"}`, OllamaDefaultContext, 0},
		{"ollama num_ctx overflows", "/api/show", `{"capabilities": ["tools"], "parameters": "num_ctx 99999999999999999999999"}`, OllamaDefaultContext, 0},
		{"ollama num_ctx negative", "/api/show", `{"capabilities": ["tools"], "parameters": "num_ctx -1"}`, OllamaDefaultContext, 0},
		{"ollama trained huge", "/api/show", `{"capabilities": ["tools"], "model_info": {"x.context_length": 1e18}, "parameters": "num_ctx 8192"}`, 8192, 0},
		{"ollama trained bounds num_ctx", "/api/show", `{"capabilities": ["tools"], "model_info": {"x.context_length": 2048}, "parameters": "num_ctx 8192"}`, 2048, 2048},
		{"llama.cpp settings huge, top level kept", "/props", `{"default_generation_settings": {"n_ctx": 4611686018427387904}, "n_ctx": 2048}`, 2048, 0},
		{"llama.cpp negative", "/props", `{"default_generation_settings": {"n_ctx": -4096}}`, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tt.path {
					http.NotFound(w, r)
					return
				}
				w.Write([]byte(tt.body))
			}))
			defer s.Close()
			got, err := Probe(context.Background(), Options{BaseURL: s.URL + "/v1", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if got.ContextTokens != tt.want || got.TrainedContext != tt.trained {
				t.Fatalf("context %d, trained %d; want %d, %d", got.ContextTokens, got.TrainedContext, tt.want, tt.trained)
			}
		})
	}
}

// FuzzRead feeds each endpoint's reader any answer: none panics, and what
// it takes is within the bounds Capabilities promise.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"ollama_models.json", "ollama_show_tools.json", "ollama_show_vision.json", "llamacpp_props.json",
		"llamacpp_props_vision.json", "llamacpp_models.json", "vllm_models.json", "lmstudio_models.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "llm", "probe", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(recordedBody(f, b))
	}
	f.Add([]byte(`{"parameters": "num_ctx 0x7fffffff\nnum_ctx -3", "model_info": {"a.context_length": -1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for i, read := range []func([]byte, *Capabilities) error{
			func(b []byte, c *Capabilities) error { return readModels(b, "m", c) },
			readOllama,
			readLlamaCpp,
		} {
			c := Capabilities{Server: ServerUnknown, Tools: ToolsUnknown}
			_ = read(b, &c)
			if c.ContextTokens < 0 || c.ContextTokens > MaxContext || c.TrainedContext < 0 || c.TrainedContext > MaxContext {
				t.Fatalf("reader %d: context %d, trained %d", i, c.ContextTokens, c.TrainedContext)
			}
			if c.TrainedContext > 0 && c.ContextTokens > c.TrainedContext && i == 1 {
				t.Fatalf("ollama's context %d above the trained %d", c.ContextTokens, c.TrainedContext)
			}
			switch c.Tools {
			case ToolsUnknown, ToolsNative, ToolsNone:
			default:
				t.Fatalf("reader %d: tools %q", i, c.Tools)
			}
		}
	})
}

// recordedBody is the answer a recorded exchange holds.
func recordedBody(tb testing.TB, b []byte) []byte {
	var v struct {
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Response) == 0 {
		tb.Fatalf("recorded exchange without a response: %v", err)
	}
	return v.Response
}
