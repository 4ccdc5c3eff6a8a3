package llm

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
)

// Provider names of Endpoint.Provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderScripted  = "scripted"
)

// Defaults of Config and Endpoint. "Local" means a base URL whose host is
// localhost, a *.local name, or a loopback, private or link-local address:
// a model on the machine or the LAN, typically one inference at a time on
// small hardware.
const (
	DefaultProvider         = ProviderScripted
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOpenAIKeyEnv     = "OPENAI_API_KEY"
	DefaultAnthropicKeyEnv  = "ANTHROPIC_API_KEY"
	DefaultAnthropicVersion = "2023-06-01"
	// DefaultLocalTimeout bounds one attempt against a local server: a
	// Raspberry Pi evaluating a long prompt on a small model can take
	// minutes before the first token.
	DefaultLocalTimeout  = 10 * time.Minute
	DefaultHostedTimeout = 2 * time.Minute
	// DefaultIdleTimeout bounds the silence between streamed chunks.
	DefaultIdleTimeout         = 2 * time.Minute
	DefaultLocalMaxConcurrent  = 1
	DefaultHostedMaxConcurrent = 4
	DefaultMaxQueued           = 32
	DefaultRetries             = 2
	DefaultBackoff             = time.Second
	DefaultMaxBackoff          = 30 * time.Second
	DefaultMaxRetryAfter       = time.Minute
	DefaultFailureThreshold    = 3
	DefaultCooldown            = time.Minute
	// DefaultLocalLoadTimeout bounds a call to a local model that is cold
	// (the first call, and the first after its server was unreachable):
	// loading a few GB of weights from an SD card comes on top of the
	// prompt's evaluation. Hosted endpoints default to their timeout.
	DefaultLocalLoadTimeout = 15 * time.Minute
	// DefaultProbeTimeout bounds capability probing of one model, all
	// probe requests together.
	DefaultProbeTimeout = 10 * time.Second
)

// Values of Endpoint.TextToolCalls, Endpoint.Probe and Endpoint.ToolMode.
const (
	Auto = "auto"
	On   = "on"
	Off  = "off"
	// ToolModeNative offers tools in the API's tools field.
	ToolModeNative = "native"
	// ToolModePrompt describes tools in the system prompt instead, for
	// models without native tool support.
	ToolModePrompt = "prompt"
)

// Duration is a time.Duration written as a Go duration string ("90s") in
// TOML.
type Duration = tomlconf.Duration

// Endpoint is one server and model: the [llm] section itself and each
// [[llm.fallback]] entry.
type Endpoint struct {
	// Provider is "openai" (any OpenAI-compatible server), "anthropic" or,
	// in [llm] only, "scripted" (default).
	Provider string `toml:"provider"`
	// BaseURL of the API (default: the provider's hosted API). For
	// OpenAI-compatible servers it ends in /v1.
	BaseURL string `toml:"base_url"`
	// Model to ask for; required for openai and anthropic.
	Model string `toml:"model"`
	// FallbackModels are tried on the same server, in order, after Model.
	FallbackModels []string `toml:"fallback_models"`
	// APIKeyEnv names the environment variable holding the API key
	// (default OPENAI_API_KEY or ANTHROPIC_API_KEY). An empty variable
	// sends no key, which local servers accept.
	APIKeyEnv string `toml:"api_key_env"`
	// Stream asks for server-sent events; false (default) waits for one
	// JSON answer.
	Stream bool `toml:"stream"`
	// Timeout bounds one attempt (default 10m for a local base URL, 2m
	// otherwise).
	Timeout Duration `toml:"timeout"`
	// IdleTimeout bounds the silence between streamed chunks once the
	// answer has begun (default 2m); only with Stream.
	IdleTimeout Duration `toml:"idle_timeout"`
	// MaxConcurrent bounds calls in flight to this server (default 1 for a
	// local base URL, 4 otherwise). Endpoints on the same server share one
	// bound, the smallest configured.
	MaxConcurrent int `toml:"max_concurrent"`
	// Retries after a rate limit, server or network error before moving
	// on (default 2; 0 disables). A pointer so that 0 is distinguishable
	// from unset.
	Retries *int `toml:"retries"`
	// MaxTokens caps the answer; 0 leaves it to the server (anthropic,
	// which requires it, then gets 4096).
	MaxTokens int `toml:"max_tokens"`
	// AnthropicVersion is the anthropic-version header (default
	// 2023-06-01).
	AnthropicVersion string `toml:"anthropic_version"`
	// TextToolCalls is "auto" (default), "on" or "off": whether tool calls
	// a model wrote as text in its answer are recovered as tool calls.
	// Auto is on for OpenAI-compatible endpoints with a local base URL or
	// without an API key, off otherwise.
	TextToolCalls string `toml:"text_tool_calls"`
	// ToolMode is "auto" (default), "native" or "prompt": how tools are
	// offered. Native uses the API's tools field; prompt describes them in
	// the system prompt for models without tool support. Auto is native
	// unless probing finds that the model has no tool support.
	ToolMode string `toml:"tool_mode"`
	// ContextTokens is the model's context window in tokens; requests are
	// trimmed to fit it. 0 (default) takes it from probing, or does not
	// trim when the server does not say.
	ContextTokens int `toml:"context_tokens"`
	// LoadTimeout bounds a call while the model is cold: the first call,
	// and the first after its server was unreachable (default 15m for a
	// local base URL, else Timeout). Never shorter than Timeout.
	LoadTimeout Duration `toml:"load_timeout"`
	// Warmup sends a one-token request to the endpoint's first model at
	// start, in the background, so that the model is loaded before the
	// first real call.
	Warmup bool `toml:"warmup"`
	// Probe is "auto" (default), "on" or "off": whether to ask the server
	// what the model supports (context size, tool support) at start and
	// after it was unreachable. Auto probes OpenAI-compatible endpoints
	// with a local base URL.
	Probe string `toml:"probe"`
	// ProbeTimeout bounds probing one model (default 10s).
	ProbeTimeout Duration `toml:"probe_timeout"`
	// Images is "auto" (default), "on" or "off": whether images in tool
	// results reach the model, or a text note stands in for each. Auto is
	// on for a hosted base URL, and for a local one only when probing
	// says the model takes images.
	Images string `toml:"images"`
	// MaxImageBytes is the largest image sent, in base64 bytes (default
	// DefaultMaxImageBytes, 1 MiB); a larger one is replaced by a note.
	MaxImageBytes int `toml:"max_image_bytes"`
	// MaxRequestImageBytes bounds all images of one request together, in
	// base64 bytes (default DefaultMaxRequestImageBytes, 4 MiB); the
	// newest are kept, older ones replaced by notes.
	MaxRequestImageBytes int `toml:"max_request_image_bytes"`
}

// Config is the [llm] section: the primary endpoint, chain-wide
// resilience settings and the fallback endpoints. Call Validate (which
// fills defaults) before use.
type Config struct {
	Endpoint
	// Transcript is the scripted provider's transcript file; empty uses
	// the built-in demo transcript.
	Transcript string `toml:"transcript"`
	// SystemPrompt is the system prompt the tool loop sends.
	SystemPrompt string `toml:"system_prompt"`
	// MaxQueued bounds calls waiting for a server's concurrency slot
	// (default 32); beyond it a call moves to the next endpoint or fails
	// with "overloaded".
	MaxQueued int `toml:"max_queued"`
	// Backoff is the first retry delay (default 1s), doubling per retry up
	// to MaxBackoff (default 30s), with jitter.
	Backoff    Duration `toml:"backoff"`
	MaxBackoff Duration `toml:"max_backoff"`
	// MaxRetryAfter is the longest Retry-After honoured by waiting
	// (default 1m); a longer one moves to the next endpoint.
	MaxRetryAfter Duration `toml:"max_retry_after"`
	// FailureThreshold consecutive failed calls cool a model down for
	// Cooldown (defaults 3 and 1m).
	FailureThreshold int      `toml:"failure_threshold"`
	Cooldown         Duration `toml:"cooldown"`
	// Fallback endpoints are tried in order after the primary's models.
	Fallback []Endpoint `toml:"fallback"`
}

// LongestLoad is the longest load_timeout of the chain's endpoints, as
// Validate filled them in: how long a first call to a cold model may take.
func (c *Config) LongestLoad() time.Duration {
	d := c.LoadTimeout.Duration
	for _, f := range c.Fallback {
		d = max(d, f.LoadTimeout.Duration)
	}
	return d
}

// LongestProbe is the longest probe_timeout of the chain's endpoints (a
// zero one counting as DefaultProbeTimeout): how long the first checks of
// their servers may take; 0 for the scripted provider, which has none.
func (c *Config) LongestProbe() time.Duration {
	if c.Provider == ProviderScripted || c.Provider == "" && len(c.Fallback) == 0 {
		return 0
	}
	d := cmp.Or(c.ProbeTimeout.Duration, DefaultProbeTimeout)
	for _, f := range c.Fallback {
		d = max(d, cmp.Or(f.ProbeTimeout.Duration, DefaultProbeTimeout))
	}
	return d
}

// Validate fills defaults and checks the configuration; errors name the
// key ("llm.fallback[0].model: ...").
func (c *Config) Validate() error {
	var errs []error
	if c.Provider == "" {
		c.Provider = DefaultProvider
	}
	if c.Provider == ProviderScripted {
		if len(c.Fallback) > 0 || len(c.FallbackModels) > 0 {
			errs = append(errs, errors.New("llm.fallback: a scripted transcript has no fallbacks; remove them or choose provider \"openai\" or \"anthropic\""))
		}
	} else {
		errs = append(errs, c.Endpoint.validate("llm")...)
	}
	for i := range c.Fallback {
		key := fmt.Sprintf("llm.fallback[%d]", i)
		if c.Fallback[i].Provider == ProviderScripted {
			errs = append(errs, fmt.Errorf("%s.provider: \"scripted\" is not a language model and cannot be a fallback", key))
			continue
		}
		errs = append(errs, c.Fallback[i].validate(key)...)
	}
	positive := func(key string, d *Duration, def time.Duration) {
		switch {
		case d.Duration < 0:
			errs = append(errs, fmt.Errorf("llm.%s: %s is negative", key, d.Duration))
		case d.Duration == 0:
			d.Duration = def
		}
	}
	positive("backoff", &c.Backoff, DefaultBackoff)
	positive("max_backoff", &c.MaxBackoff, DefaultMaxBackoff)
	positive("max_retry_after", &c.MaxRetryAfter, DefaultMaxRetryAfter)
	positive("cooldown", &c.Cooldown, DefaultCooldown)
	if c.MaxBackoff.Duration < c.Backoff.Duration {
		errs = append(errs, fmt.Errorf("llm.max_backoff: %s is shorter than backoff %s", c.MaxBackoff.Duration, c.Backoff.Duration))
	}
	switch {
	case c.MaxQueued < 0:
		errs = append(errs, fmt.Errorf("llm.max_queued: %d is negative", c.MaxQueued))
	case c.MaxQueued == 0:
		c.MaxQueued = DefaultMaxQueued
	}
	switch {
	case c.FailureThreshold < 0:
		errs = append(errs, fmt.Errorf("llm.failure_threshold: %d is negative", c.FailureThreshold))
	case c.FailureThreshold == 0:
		c.FailureThreshold = DefaultFailureThreshold
	}
	return errors.Join(errs...)
}

// validate fills an endpoint's defaults and checks it; key prefixes errors.
func (e *Endpoint) validate(key string) []error {
	var errs []error
	switch e.Provider {
	case ProviderOpenAI:
		if e.BaseURL == "" {
			e.BaseURL = DefaultOpenAIBaseURL
		}
		if e.APIKeyEnv == "" {
			e.APIKeyEnv = DefaultOpenAIKeyEnv
		}
	case ProviderAnthropic:
		if e.BaseURL == "" {
			e.BaseURL = DefaultAnthropicBaseURL
		}
		if e.APIKeyEnv == "" {
			e.APIKeyEnv = DefaultAnthropicKeyEnv
		}
		if e.AnthropicVersion == "" {
			e.AnthropicVersion = DefaultAnthropicVersion
		}
	case "":
		return append(errs, fmt.Errorf("%s.provider: required: \"openai\" or \"anthropic\"", key))
	default:
		return append(errs, fmt.Errorf("%s.provider: %q, want \"openai\" (any OpenAI-compatible server: llama.cpp, Ollama, vLLM, LM Studio), \"anthropic\" or \"scripted\"", key, e.Provider))
	}
	u, err := url.Parse(e.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("%s.base_url: %q, want an http:// or https:// URL such as \"http://127.0.0.1:8080/v1\"", key, e.BaseURL))
	}
	if strings.TrimSpace(e.Model) == "" {
		errs = append(errs, fmt.Errorf("%s.model: required for provider %q (a local server that ignores it still needs a name for the audit trail)", key, e.Provider))
	}
	for i, m := range e.FallbackModels {
		if strings.TrimSpace(m) == "" {
			errs = append(errs, fmt.Errorf("%s.fallback_models[%d]: empty model name", key, i))
		}
	}
	local := IsLocalURL(e.BaseURL)
	if e.Timeout.Duration < 0 {
		errs = append(errs, fmt.Errorf("%s.timeout: %s is negative", key, e.Timeout.Duration))
	} else if e.Timeout.Duration == 0 {
		e.Timeout.Duration = DefaultHostedTimeout
		if local {
			e.Timeout.Duration = DefaultLocalTimeout
		}
	}
	if e.IdleTimeout.Duration < 0 {
		errs = append(errs, fmt.Errorf("%s.idle_timeout: %s is negative (a stream must not go silent forever)", key, e.IdleTimeout.Duration))
	} else if e.IdleTimeout.Duration == 0 {
		e.IdleTimeout.Duration = DefaultIdleTimeout
	}
	if e.MaxConcurrent < 0 {
		errs = append(errs, fmt.Errorf("%s.max_concurrent: %d is negative", key, e.MaxConcurrent))
	} else if e.MaxConcurrent == 0 {
		e.MaxConcurrent = DefaultHostedMaxConcurrent
		if local {
			e.MaxConcurrent = DefaultLocalMaxConcurrent
		}
	}
	if e.Retries == nil {
		r := DefaultRetries
		e.Retries = &r
	} else if *e.Retries < 0 {
		errs = append(errs, fmt.Errorf("%s.retries: %d is negative (0 disables retries)", key, *e.Retries))
	}
	if e.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("%s.max_tokens: %d is negative", key, e.MaxTokens))
	}
	return append(errs, e.validateLocal(key, local)...)
}

// validateLocal fills and checks the settings for local models.
func (e *Endpoint) validateLocal(key string, local bool) []error {
	var errs []error
	oneOf := func(name string, v *string, allowed ...string) {
		if *v == "" {
			*v = Auto
		}
		for _, a := range allowed {
			if *v == a {
				return
			}
		}
		errs = append(errs, fmt.Errorf("%s.%s: %q, want one of %q", key, name, *v, allowed))
	}
	oneOf("text_tool_calls", &e.TextToolCalls, Auto, On, Off)
	oneOf("tool_mode", &e.ToolMode, Auto, ToolModeNative, ToolModePrompt)
	oneOf("probe", &e.Probe, Auto, On, Off)
	oneOf("images", &e.Images, Auto, On, Off)
	switch {
	case e.MaxImageBytes < 0:
		errs = append(errs, fmt.Errorf("%s.max_image_bytes: %d is negative", key, e.MaxImageBytes))
	case e.MaxImageBytes == 0:
		e.MaxImageBytes = DefaultMaxImageBytes
	}
	switch {
	case e.MaxRequestImageBytes < 0:
		errs = append(errs, fmt.Errorf("%s.max_request_image_bytes: %d is negative", key, e.MaxRequestImageBytes))
	case e.MaxRequestImageBytes == 0:
		e.MaxRequestImageBytes = max(DefaultMaxRequestImageBytes, e.MaxImageBytes)
	}
	if e.ContextTokens < 0 {
		errs = append(errs, fmt.Errorf("%s.context_tokens: %d is negative", key, e.ContextTokens))
	}
	switch {
	case e.LoadTimeout.Duration < 0:
		errs = append(errs, fmt.Errorf("%s.load_timeout: %s is negative", key, e.LoadTimeout.Duration))
	case e.LoadTimeout.Duration == 0:
		e.LoadTimeout.Duration = e.Timeout.Duration
		if local {
			e.LoadTimeout.Duration = max(DefaultLocalLoadTimeout, e.Timeout.Duration)
		}
	case e.LoadTimeout.Duration < e.Timeout.Duration:
		errs = append(errs, fmt.Errorf("%s.load_timeout: %s is shorter than timeout %s (a cold model needs longer, not shorter)", key, e.LoadTimeout.Duration, e.Timeout.Duration))
	}
	if e.ProbeTimeout.Duration < 0 {
		errs = append(errs, fmt.Errorf("%s.probe_timeout: %s is negative", key, e.ProbeTimeout.Duration))
	} else if e.ProbeTimeout.Duration == 0 {
		e.ProbeTimeout.Duration = DefaultProbeTimeout
	}
	return errs
}

// RecoverTextCalls reports whether tool calls written as text are
// recovered for this endpoint: text_tool_calls "on", or "auto" for an
// OpenAI-compatible endpoint that is local or has no API key (a server the
// user runs, whose chat template may not parse the model's calls).
func (e *Endpoint) RecoverTextCalls(hasKey bool) bool {
	switch e.TextToolCalls {
	case On:
		return true
	case Off:
		return false
	}
	return e.Provider == ProviderOpenAI && (IsLocalURL(e.BaseURL) || !hasKey)
}

// SendsImages reports whether images reach the model: images "on", or
// "auto" for a hosted base URL, or for a local one when vision is set
// (probing found that the model takes images). A local server without a
// vision model refuses a request with an image (llama.cpp without an
// mmproj file answers with an error), so a local model is text-only until
// its server says otherwise.
func (e *Endpoint) SendsImages(vision bool) bool {
	switch e.Images {
	case On:
		return true
	case Off:
		return false
	}
	return !IsLocalURL(e.BaseURL) || vision
}

// ImageLimits are the endpoint's bounds on images.
func (e *Endpoint) ImageLimits() ImageLimits {
	return ImageLimits{PerImage: e.MaxImageBytes, PerRequest: e.MaxRequestImageBytes}
}

// Probes reports whether the server is asked what the model supports:
// probe "on", or "auto" for a local OpenAI-compatible endpoint.
func (e *Endpoint) Probes() bool {
	switch e.Probe {
	case On:
		return e.Provider == ProviderOpenAI
	case Off:
		return false
	}
	return e.Provider == ProviderOpenAI && IsLocalURL(e.BaseURL)
}

// IsLocalURL reports whether a base URL points at this machine or the LAN:
// localhost, a *.local (mDNS) name, a name without a dot (this machine's
// host name, a LAN name found through the hosts file or the resolver's
// search domain, a container's service name: no hosted API has one), or a
// loopback, private or link-local IP.
func IsLocalURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") {
		return true
	}
	if host != "" && !strings.Contains(host, ".") && !strings.Contains(host, ":") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
}
