package llm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
)

// decode reads an [llm] section the way a node's config loader does:
// unknown keys are errors.
func decode(t *testing.T, src string) Config {
	t.Helper()
	var v struct {
		LLM Config `toml:"llm"`
	}
	if err := tomlconf.Decode(src, &v); err != nil {
		t.Fatal(err)
	}
	return v.LLM
}

func TestDecodeFullConfig(t *testing.T) {
	c := decode(t, `
[llm]
provider = "openai"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5-1.5b-instruct"
fallback_models = ["tinyllama"]
api_key_env = "LOCAL_KEY"
stream = true
timeout = "15m"
idle_timeout = "90s"
max_concurrent = 1
retries = 0
max_tokens = 800
transcript = "t.json"
system_prompt = "You run tools."
max_queued = 4
backoff = "2s"
max_backoff = "20s"
max_retry_after = "45s"
failure_threshold = 2
cooldown = "5m"

[[llm.fallback]]
provider = "anthropic"
model = "claude-haiku-4-5"
timeout = "90s"
retries = 3
`)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Provider != "openai" || c.BaseURL != "http://127.0.0.1:8080/v1" || c.Model != "qwen2.5-1.5b-instruct" ||
		len(c.FallbackModels) != 1 || c.APIKeyEnv != "LOCAL_KEY" || !c.Stream || c.Timeout.Duration != 15*time.Minute ||
		c.IdleTimeout.Duration != 90*time.Second || c.MaxConcurrent != 1 || *c.Retries != 0 || c.MaxTokens != 800 ||
		c.Transcript != "t.json" || c.SystemPrompt != "You run tools." || c.MaxQueued != 4 || c.Backoff.Duration != 2*time.Second ||
		c.MaxBackoff.Duration != 20*time.Second || c.MaxRetryAfter.Duration != 45*time.Second || c.FailureThreshold != 2 ||
		c.Cooldown.Duration != 5*time.Minute {
		t.Fatalf("primary = %+v", c)
	}
	f := c.Fallback[0]
	if len(c.Fallback) != 1 || f.Provider != "anthropic" || f.BaseURL != DefaultAnthropicBaseURL || f.APIKeyEnv != "ANTHROPIC_API_KEY" ||
		f.Timeout.Duration != 90*time.Second || *f.Retries != 3 || f.MaxConcurrent != DefaultHostedMaxConcurrent || f.AnthropicVersion != "2023-06-01" {
		t.Fatalf("fallback = %+v", f)
	}
}

func TestDefaults(t *testing.T) {
	var zero Config
	if err := zero.Validate(); err != nil || zero.Provider != ProviderScripted {
		t.Fatalf("zero config: %v %+v", err, zero)
	}
	local := decode(t, "[llm]\nprovider = \"openai\"\nbase_url = \"http://192.168.1.20:11434/v1\"\nmodel = \"qwen2.5:1.5b\"\n")
	if err := local.Validate(); err != nil {
		t.Fatal(err)
	}
	if local.Timeout.Duration != DefaultLocalTimeout || local.MaxConcurrent != 1 || *local.Retries != DefaultRetries ||
		local.APIKeyEnv != "OPENAI_API_KEY" || local.IdleTimeout.Duration != DefaultIdleTimeout || local.Stream {
		t.Fatalf("local = %+v", local)
	}
	hosted := decode(t, "[llm]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\n")
	if err := hosted.Validate(); err != nil {
		t.Fatal(err)
	}
	if hosted.BaseURL != DefaultOpenAIBaseURL || hosted.Timeout.Duration != DefaultHostedTimeout || hosted.MaxConcurrent != DefaultHostedMaxConcurrent {
		t.Fatalf("hosted = %+v", hosted)
	}
}

func TestValidateMessages(t *testing.T) {
	tests := map[string]struct{ src, want string }{
		"unknown provider": {`provider = "gemini"`, `llm.provider: "gemini", want "openai"`},
		"missing model":    {`provider = "anthropic"`, "llm.model: required"},
		"bad url":          {"provider = \"openai\"\nmodel = \"m\"\nbase_url = \"localhost:8080\"", "llm.base_url: \"localhost:8080\", want an http://"},
		"negative retries": {"provider = \"openai\"\nmodel = \"m\"\nretries = -1", "llm.retries: -1 is negative"},
		"negative idle":    {"provider = \"openai\"\nmodel = \"m\"\nidle_timeout = \"-1s\"", "llm.idle_timeout: -1s is negative"},
		"backoff order":    {"provider = \"openai\"\nmodel = \"m\"\nbackoff = \"1m\"\nmax_backoff = \"10s\"", "llm.max_backoff: 10s is shorter than backoff 1m0s"},
		"scripted fallback": {"provider = \"scripted\"\n[[llm.fallback]]\nprovider = \"openai\"\nmodel = \"m\"",
			"llm.fallback: a scripted transcript has no fallbacks"},
		"fallback model":       {"provider = \"openai\"\nmodel = \"m\"\n[[llm.fallback]]\nprovider = \"openai\"", "llm.fallback[0].model: required"},
		"fallback scripted":    {"provider = \"openai\"\nmodel = \"m\"\n[[llm.fallback]]\nprovider = \"scripted\"", "llm.fallback[0].provider: \"scripted\" is not a language model"},
		"empty fallback model": {"provider = \"openai\"\nmodel = \"m\"\nfallback_models = [\"\"]", "llm.fallback_models[0]: empty"},
	}
	for name, tt := range tests {
		c := decode(t, "[llm]\n"+tt.src+"\n")
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tt.want)
		}
	}
	var v struct {
		LLM Config `toml:"llm"`
	}
	if err := tomlconf.Decode("[llm]\ntimeout = \"ten minutes\"\n", &v); err == nil || !strings.Contains(err.Error(), "want a duration like") {
		t.Errorf("bad duration: %v", err)
	}
}

func TestIsLocalURL(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:8080/v1":     true,
		"http://localhost:11434/v1":    true,
		"http://pi-kitchen.local:8080": true,
		"http://10.0.0.5:8000/v1":      true,
		"http://192.168.1.20:1234/v1":  true,
		"http://[::1]:8080/v1":         true,
		"http://[fe80::1]:8080":        true,
		// names without a dot resolve on this machine or the LAN only: a
		// container's service, the machine's own name, a typo of localhost
		"http://ollama:11434/v1":        true,
		"http://GPU-BOX:8080/v1":        true,
		"http://localhsot:11434/v1":     true,
		"http:///v1":                    false,
		"https://api.openai.com/v1":     false,
		"https://api.anthropic.com":     false,
		"http://8.8.8.8/v1":             false,
		"::not a url":                   false,
		"https://llm.example.com:443/x": false,
	} {
		if got := IsLocalURL(u); got != want {
			t.Errorf("IsLocalURL(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	for status, want := range map[int]ErrorKind{400: KindBadRequest, 401: KindAuth, 403: KindAuth, 404: KindBadRequest, 408: KindTimeout,
		409: KindServer, 422: KindBadRequest, 429: KindRateLimited, 500: KindServer, 503: KindServer, 529: KindRateLimited} {
		if got := KindForStatus(status); got != want {
			t.Errorf("KindForStatus(%d) = %s, want %s", status, got, want)
		}
	}
	if !(&Error{Kind: KindTimeout, Status: 408}).Retryable() || (&Error{Kind: KindTimeout}).Retryable() || (&Error{Kind: KindAuth, Status: 401}).Retryable() {
		t.Error("Retryable: 408 yes, a plain timeout and 401 no")
	}
	e := &Error{Kind: KindServer, Provider: "openai", Model: "m", Status: 500, Message: "boom"}
	if e.Error() != `llm openai model "m": server (HTTP 500): boom` {
		t.Errorf("Error() = %q", e.Error())
	}
	if got := Excerpt("héllo wörld", 7); got != "héllo…" {
		t.Errorf("Excerpt = %q", got)
	}
}

func TestParseArguments(t *testing.T) {
	tests := []struct {
		in, args string
		bad      bool
		text     string
	}{
		{"", "{}", false, "{}"},
		{" {\"a\": 1} ", `{"a":1}`, false, `{"a":1}`},
		{`{"path": "/etc/host`, `"{\"path\": \"/etc/host"`, true, `{"path": "/etc/host`},
		{`[1, 2]`, `[1,2]`, false, `[1,2]`},
		{"not json", `"not json"`, true, "not json"},
		{`"{\"a\": 1}"`, `{"a":1}`, false, `{"a":1}`},
		{` " {\"a\": [1]} " `, `{"a":[1]}`, false, `{"a":[1]}`},
		{`"plain text"`, `"plain text"`, false, `"plain text"`},
		{`"[1, 2]"`, `"[1, 2]"`, false, `"[1, 2]"`},
		{`"{\"a\": "`, `"{\"a\": "`, false, `"{\"a\": "`},
	}
	for _, tt := range tests {
		args, errText := ParseArguments([]byte(tt.in))
		c := ToolCall{Arguments: args, ArgumentsError: errText}
		if string(args) != tt.args || (errText != "") != tt.bad || c.ArgumentsText() != tt.text {
			t.Errorf("ParseArguments(%q) = %s, %q; text %q", tt.in, args, errText, c.ArgumentsText())
		}
	}
}

func TestArgumentText(t *testing.T) {
	for in, want := range map[string]string{
		``:                       ``,
		` null `:                 ``,
		`"{\"path\": \"/etc\"}"`: `{"path": "/etc"}`,
		` {"path": "/etc"} `:     `{"path": "/etc"}`,
		`"broken`:                `"broken`,
	} {
		if got := string(ArgumentText([]byte(in))); got != want {
			t.Errorf("ArgumentText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLocalModelSettings(t *testing.T) {
	c := decode(t, `
[llm]
provider = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5:1.5b"
timeout = "2m"
text_tool_calls = "off"
tool_mode = "prompt"
context_tokens = 8192
load_timeout = "5m"
warmup = true
probe = "off"
probe_timeout = "3s"
`)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TextToolCalls != Off || c.ToolMode != ToolModePrompt || c.ContextTokens != 8192 || c.LoadTimeout.Duration != 5*time.Minute ||
		!c.Warmup || c.Probe != Off || c.ProbeTimeout.Duration != 3*time.Second || c.RecoverTextCalls(false) || c.Probes() {
		t.Fatalf("settings = %+v", c.Endpoint)
	}
	local := decode(t, "[llm]\nprovider = \"openai\"\nbase_url = \"http://pi.local:8080/v1\"\nmodel = \"m\"\n")
	hosted := decode(t, "[llm]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\ntimeout = \"30s\"\n")
	if err := errors.Join(local.Validate(), hosted.Validate()); err != nil {
		t.Fatal(err)
	}
	if local.TextToolCalls != Auto || local.ToolMode != Auto || local.Probe != Auto || local.LoadTimeout.Duration != DefaultLocalLoadTimeout ||
		local.ProbeTimeout.Duration != DefaultProbeTimeout || !local.RecoverTextCalls(true) || !local.Probes() {
		t.Fatalf("local defaults = %+v", local.Endpoint)
	}
	if hosted.LoadTimeout.Duration != 30*time.Second || hosted.RecoverTextCalls(true) || !hosted.RecoverTextCalls(false) || hosted.Probes() {
		t.Fatalf("hosted defaults = %+v (recover with key %v)", hosted.Endpoint, hosted.RecoverTextCalls(true))
	}
	for src, want := range map[string]string{
		`text_tool_calls = "yes"`:                 `llm.text_tool_calls: "yes", want one of`,
		`tool_mode = "xml"`:                       `llm.tool_mode: "xml"`,
		`context_tokens = -1`:                     "llm.context_tokens: -1 is negative",
		"timeout = \"5m\"\nload_timeout = \"1m\"": "llm.load_timeout: 1m0s is shorter than timeout 5m0s",
	} {
		c := decode(t, "[llm]\nprovider = \"openai\"\nmodel = \"m\"\n"+src+"\n")
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

func TestImageSettings(t *testing.T) {
	local := decode(t, "[llm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n")
	hosted := decode(t, "[llm]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\n")
	set := decode(t, "[llm]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\nimages = \"off\"\nmax_image_bytes = 2048\nmax_request_image_bytes = 4096\n\n"+
		"[[llm.fallback]]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"llava\"\nimages = \"on\"\n")
	if err := errors.Join(local.Validate(), hosted.Validate(), set.Validate()); err != nil {
		t.Fatal(err)
	}
	if local.Images != Auto || local.SendsImages(false) || !local.SendsImages(true) ||
		local.ImageLimits() != (ImageLimits{PerImage: DefaultMaxImageBytes, PerRequest: DefaultMaxRequestImageBytes}) {
		t.Fatalf("local = %+v", local.Endpoint)
	}
	if !hosted.SendsImages(false) {
		t.Fatal("a hosted endpoint does not send images by default")
	}
	if set.SendsImages(true) || set.ImageLimits() != (ImageLimits{PerImage: 2048, PerRequest: 4096}) || !set.Fallback[0].SendsImages(false) {
		t.Fatalf("explicit = %+v, fallback %+v", set.Endpoint, set.Fallback[0])
	}
	for src, want := range map[string]string{
		`images = "maybe"`:             `llm.images: "maybe", want one of`,
		`max_image_bytes = -1`:         "llm.max_image_bytes: -1 is negative",
		`max_request_image_bytes = -5`: "llm.max_request_image_bytes: -5 is negative",
	} {
		c := decode(t, "[llm]\nprovider = \"openai\"\nmodel = \"m\"\n"+src+"\n")
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

// LongestProbe is how long serve waits for the first checks of the
// model servers before it says what they found: the longest
// probe_timeout of the chain, none for the scripted player or no model.
func TestLongestProbe(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       time.Duration
	}{
		{"no model", "", 0},
		{"scripted", "[llm]\nprovider = \"scripted\"\ntranscript = \"t.json\"\n", 0},
		{"default", "[llm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n", DefaultProbeTimeout},
		{"a fallback's longer", "[llm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\nprobe_timeout = \"2s\"\n" +
			"[[llm.fallback]]\nprovider = \"openai\"\nbase_url = \"http://10.0.0.2:8080/v1\"\nmodel = \"n\"\nprobe_timeout = \"30s\"\n", 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v struct {
				LLM Config `toml:"llm"`
			}
			if err := tomlconf.Decode(tc.toml, &v); err != nil {
				t.Fatal(err)
			}
			if got := v.LLM.LongestProbe(); got != tc.want {
				t.Fatalf("LongestProbe = %s, want %s", got, tc.want)
			}
		})
	}
}
