package providers

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// fakeOllama serves the recorded probe answers of an Ollama model without
// tool support and answers chats with a Hermes call written as text, then
// with a text answer quoting the tool result. It records chat bodies.
func fakeOllama(t *testing.T) (*httptest.Server, func() []map[string]any) {
	return fakeOllamaShow(t, "probe/ollama_show_no_tools.json")
}

// fakeOllamaShow is fakeOllama answering /api/show with the recorded pair
// show.
func fakeOllamaShow(t *testing.T, show string) (*httptest.Server, func() []map[string]any) {
	models := llmtest.Load(t, "probe/ollama_models.json").Response
	shown := llmtest.Load(t, show).Response
	var chats testenv.Recorded[map[string]any]
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			w.Write(models)
		case "/api/show":
			w.Write(shown)
		case "/v1/chat/completions":
			b, _ := io.ReadAll(r.Body)
			var req map[string]any
			json.Unmarshal(b, &req)
			chats.Add(req)
			content := "<tool_call>\n{\"name\": \"pi-1__sysinfo\", \"arguments\": {}}\n</tool_call>"
			msgs, _ := req["messages"].([]any)
			last, _ := msgs[len(msgs)-1].(map[string]any)
			if text, _ := last["content"].(string); strings.HasPrefix(text, "<tool_response>") {
				content = "All good."
			}
			c, _ := json.Marshal(content)
			w.Write([]byte(`{"id":"x","model":"gemma2:2b","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":` + string(c) + `}}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s, chats.All
}

// Probing finds a model without tool support: tools go into the system
// prompt, the call written as text is recovered, and the context window
// comes from Ollama's default. The warm-up request arrives first.
func TestProbeChoosesPromptMode(t *testing.T) {
	s, chats := fakeOllama(t)
	var logs testenv.Buffer
	cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \"gemma2:2b\"\nwarmup = true\n")
	cfg.BaseURL = s.URL + "/v1"
	p, err := NewWith(cfg, logs.Logger(slog.LevelInfo), Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	chain := p.(*resilient.Chain)
	defer chain.Close()
	testenv.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "tool_mode=prompt") && len(chats()) == 1
	}, "the probe result and the warm-up")
	out := logs.String()
	if !strings.Contains(out, "server=ollama") || !strings.Contains(out, "context_tokens=4096") || !strings.Contains(out, "tools=none") {
		t.Fatalf("logs:\n%s", out)
	}
	if warm := chats()[0]; warm["max_tokens"] != float64(1) {
		t.Fatalf("warm-up request %v", warm)
	}
	req := llm.Request{Tools: []llm.ToolDef{{Name: "pi-1__sysinfo", Description: "CPU temperature"}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "temperature?"}}}
	r, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Name != "pi-1__sysinfo" {
		t.Fatalf("answer %+v", r.Message)
	}
	sent := chats()[1]
	if _, ok := sent["tools"]; ok {
		t.Fatal("tools sent natively to a model without tool support")
	}
	msgs, _ := json.Marshal(sent["messages"])
	if !strings.Contains(string(msgs), "# Tools") || !strings.Contains(string(msgs), "pi-1__sysinfo") {
		t.Fatalf("messages %s", msgs)
	}
}

// An explicit setting wins over what the server says.
func TestExplicitSettingsWin(t *testing.T) {
	s, chats := fakeOllama(t)
	var logs testenv.Buffer
	cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \"gemma2:2b\"\ntool_mode = \"native\"\ntext_tool_calls = \"off\"\ncontext_tokens = 100000\n")
	cfg.BaseURL = s.URL + "/v1"
	p, err := NewWith(cfg, logs.Logger(slog.LevelInfo), Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(*resilient.Chain).Close()
	testenv.Eventually(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "llm capabilities") }, "the probe")
	p.(*resilient.Chain).Close() // the probe has been applied
	r, err := p.Complete(context.Background(), llm.Request{Tools: []llm.ToolDef{{Name: "pi-1__sysinfo"}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "temperature?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Message.ToolCalls) != 0 || !strings.Contains(r.Message.Content, "<tool_call>") {
		t.Fatalf("text_tool_calls = off must leave the text: %+v", r.Message)
	}
	if _, ok := chats()[0]["tools"]; !ok {
		t.Fatal("tool_mode = native must send tools")
	}
	if !strings.Contains(logs.String(), "context_tokens=100000") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

// A server that has no probe endpoint and never answers does not hold up
// New, and Close ends the probe.
func TestProbeNeverBlocksStart(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer s.Close()
	defer close(release)
	cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nprobe_timeout = \"1m\"\n")
	cfg.BaseURL = s.URL + "/v1"
	start := time.Now()
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.(*resilient.Chain).Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("New and Close took %s with a silent server", d)
	}
}

// A local model is text-only until probing says it takes images: then the
// request carries the image of a tool result (in prompt tool mode, inside
// the user message of <tool_response>s, as Ollama's model has no tools).
func TestProbeTurnsImagesOn(t *testing.T) {
	for _, tt := range []struct {
		show, model string
		images      bool
	}{
		{"probe/ollama_show_vision.json", "gemma3:4b", true},
		{"probe/ollama_show_no_tools.json", "gemma2:2b", false},
	} {
		t.Run(tt.model, func(t *testing.T) {
			s, chats := fakeOllamaShow(t, tt.show)
			var logs testenv.Buffer
			cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \""+tt.model+"\"\n")
			cfg.BaseURL = s.URL + "/v1"
			p, err := NewWith(cfg, logs.Logger(slog.LevelInfo), Options{Getenv: env(nil)})
			if err != nil {
				t.Fatal(err)
			}
			defer p.(*resilient.Chain).Close()
			testenv.Eventually(t, 10*time.Second, func() bool { return strings.Count(logs.String(), "llm tool settings") == 2 }, "the probe applied")
			if !strings.Contains(logs.String(), "vision="+strconv.FormatBool(tt.images)) {
				t.Fatalf("logs:\n%s", logs.String())
			}
			if _, err := p.Complete(context.Background(), llmtest.ImageRequest(tt.model, "c_")); err != nil {
				t.Fatal(err)
			}
			msgs, _ := json.Marshal(chats()[0]["messages"])
			if got := strings.Contains(string(msgs), `"image_url":{"url":"data:image/png;base64,`+llmtest.PNG); got != tt.images {
				t.Fatalf("image sent %v, want %v: %s", got, tt.images, msgs)
			}
		})
	}
}
