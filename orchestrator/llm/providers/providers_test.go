package providers

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

func config(t *testing.T, src string) llm.Config {
	t.Helper()
	var v struct {
		LLM llm.Config `toml:"llm"`
	}
	if err := tomlconf.Decode(src, &v); err != nil {
		t.Fatal(err)
	}
	return v.LLM
}

// closeLater stops the chain's background probes at the end of the test.
func closeLater(t *testing.T, p llm.Provider) {
	if c, ok := p.(*resilient.Chain); ok {
		t.Cleanup(func() { c.Close() })
	}
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestScripted(t *testing.T) {
	p, err := New(llm.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(scripted.Offline); !ok || p.Name() != scripted.OfflineLabel {
		t.Fatalf("zero config gave %T %q, want scripted.Offline, which refuses every chat", p, p.Name())
	}
	if _, err := New(llm.Config{Transcript: "../../../testdata/transcripts/two-turns.json"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := New(llm.Config{Transcript: "nope.json"}, nil); err == nil {
		t.Fatal("missing transcript accepted")
	}
}

func TestInvalidConfigFails(t *testing.T) {
	_, err := New(config(t, "[llm]\nprovider = \"openai\"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "llm config: llm.model: required") {
		t.Fatalf("err = %v", err)
	}
}

func TestChainShape(t *testing.T) {
	p, err := New(config(t, `
[llm]
provider = "openai"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5-3b"
fallback_models = ["qwen2.5-0.5b"]

[[llm.fallback]]
provider = "openai"
base_url = "http://127.0.0.1:8080/v1/"
model = "tinyllama"
max_concurrent = 3

[[llm.fallback]]
provider = "anthropic"
model = "claude-haiku-4-5"
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, p)
	chain, ok := p.(*resilient.Chain)
	if !ok {
		t.Fatalf("got %T", p)
	}
	if chain.Name() != "openai:qwen2.5-3b -> openai:qwen2.5-0.5b -> openai:tinyllama -> anthropic:claude-haiku-4-5" {
		t.Fatalf("name %q", chain.Name())
	}
}

// The primary local model fails with 500s (one retry), the hosted
// Anthropic fallback answers with the key from its environment variable.
func TestFallbackAcrossProviders(t *testing.T) {
	fail := llmtest.Load(t, "openai/server_error.json")
	local := llmtest.Serve(t, fail, fail)
	hosted := llmtest.Serve(t, llmtest.Load(t, "anthropic/tool_use.json"))
	cfg := config(t, `
[llm]
provider = "openai"
model = "qwen2.5-1.5b"
retries = 1
probe = "off"
[[llm.fallback]]
provider = "anthropic"
model = "claude-sonnet-4-5"
max_tokens = 512
api_key_env = "TEST_ANTHROPIC_KEY"
`)
	cfg.BaseURL = local.URL + "/v1"
	cfg.SystemPrompt = "unused here"
	cfg.Fallback[0].BaseURL = hosted.URL
	var slept []time.Duration
	p, err := NewWith(cfg, nil, Options{
		Getenv: env(map[string]string{"TEST_ANTHROPIC_KEY": "sk-ant-test"}),
		Chain: resilient.Options{Sleep: func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, p)
	req := llm.Request{Model: "from-loop", System: "You run tools on Raspberry Pis.", Tools: []llm.ToolDef{
		{Name: "pi-1__read_file", Description: "Read a file", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}},
		{Name: "pi-1__sysinfo", Description: "Report CPU temperature and load", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"verbose": map[string]any{"type": "boolean"}}}},
	}, Messages: []llm.Message{{Role: llm.RoleUser, Content: "Check the CPU temperature"}}}
	r, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Provider != "anthropic" || r.Attempts != 3 || len(r.Message.ToolCalls) != 1 || local.Requests() != 2 || len(slept) != 1 {
		t.Fatalf("r = %+v; local requests %d; slept %v", r, local.Requests(), slept)
	}
	h := p.(*resilient.Chain).Health()
	if h[0].LastKind != llm.KindServer || h[0].InFlight != 0 || h[1].ConsecutiveFailures != 0 {
		t.Fatalf("health = %+v", h)
	}
}

func TestMissingKeyWarnsOnlyForRemote(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := config(t, "[llm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n"+
		"[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\n")
	p, err := NewWith(cfg, logger, Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	p.(*resilient.Chain).Close()
	out := logs.String()
	if strings.Count(out, "no API key") != 1 || !strings.Contains(out, "key=llm.fallback[0]") || !strings.Contains(out, "env=OPENAI_API_KEY") {
		t.Fatalf("logs:\n%s", out)
	}
}

// A key sent over plain http:// to a host past the LAN is warned about,
// naming the endpoint; over https://, or to a LAN or loopback address, it
// is not.
func TestKeyOverPlainHTTPWarns(t *testing.T) {
	for _, tc := range []struct {
		base string
		warn bool
	}{
		{"http://203.0.113.7:8080/v1", true},
		{"HTTP://models.example.com/v1", true},
		{"https://models.example.com/v1", false},
		{"http://192.168.1.20:8080/v1", false},
		{"http://127.0.0.1:8080/v1", false},
		{"http://gpu.local:11434/v1", false},
	} {
		t.Run(tc.base, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			cfg := config(t, "[llm]\nprovider = \"openai\"\nbase_url = \""+tc.base+"\"\nmodel = \"m\"\n")
			p, err := NewWith(cfg, logger, Options{Getenv: env(map[string]string{"OPENAI_API_KEY": "sk-test"})})
			if err != nil {
				t.Fatal(err)
			}
			p.(*resilient.Chain).Close()
			out := logs.String()
			if got := strings.Contains(out, "API key sent unencrypted") && strings.Contains(out, "key=llm "); got != tc.warn {
				t.Fatalf("warned %v, want %v; logs:\n%s", got, tc.warn, out)
			}
			if strings.Contains(out, "sk-test") {
				t.Fatalf("the key is in the logs:\n%s", out)
			}
		})
	}
}
