// Package providers builds the llm.Provider a node or edge agent uses from
// its [llm] configuration: the scripted transcript player, or a
// resilient.Chain of OpenAI-compatible and Anthropic endpoints.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package providers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/anthropic"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/openai"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// Log keys.
const (
	logComponent = "component"
	logChain     = "chain"
	logKey       = "key"
	logEnv       = "env"
	logBaseURL   = "base_url"
)

// LocalColdAfter is how long a local model may sit idle before the next
// call allows for loading it again: Ollama's default keep_alive.
const LocalColdAfter = 5 * time.Minute

// Options are seams for tests and embedders; the zero value is ready.
type Options struct {
	// Getenv reads API keys (default os.Getenv).
	Getenv func(string) string
	// Client sends HTTP requests (default: one client for all endpoints).
	Client *http.Client
	// Chain tunes the chain beyond Config (clock, sleep, jitter); Config's
	// values override its backoff, cool-down and logger fields.
	Chain resilient.Options
	// Reprobe is the first wait before checking a server that did not
	// answer again (default DefaultReprobe).
	Reprobe time.Duration
	// Lookup resolves the host names of endpoints that are not probed
	// (default net.DefaultResolver.LookupHost).
	Lookup func(ctx context.Context, host string) ([]string, error)
}

// New validates a copy of cfg and builds its provider. For "openai" and
// "anthropic" the result is a *resilient.Chain (its Health method reports
// each model; its Close stops capability probes and warm-ups still
// running); for "scripted" it is a *scripted.Provider playing the
// configured transcript, or without one scripted.Offline, which fails
// every call with an llm.KindNotConfigured error saying no model is
// configured. logger may be nil.
//
// Each model of the chain is wrapped in an images.Provider (whether images
// reach the model, and their limits) around a budget.Provider (context
// window) around a textcalls.Provider (tool calls written as text, tools in
// the prompt). Probing and warm-up run in the background, owned by the chain:
// New never waits for them.
func New(cfg llm.Config, logger *slog.Logger) (llm.Provider, error) {
	return NewWith(cfg, logger, Options{})
}

// NewWith is New with seams.
func NewWith(cfg llm.Config, logger *slog.Logger, o Options) (llm.Provider, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With(logComponent, "llm")
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("llm config: %w", err)
	}
	if cfg.Provider == llm.ProviderScripted {
		if cfg.Transcript == "" {
			logger.Warn("no LLM configured: every chat is refused (HTTP 503, code model_not_configured); configure [llm] (docs/LLM.md)")
			return scripted.Offline{}, nil
		}
		return scripted.Load(cfg.Transcript)
	}
	limiters := map[string]*resilient.Limiter{}
	limits := map[string]int{}
	endpoints := append([]llm.Endpoint{cfg.Endpoint}, cfg.Fallback...)
	for _, e := range endpoints {
		k := serverKey(e)
		if n, ok := limits[k]; !ok || e.MaxConcurrent < n {
			limits[k] = e.MaxConcurrent
		}
	}
	var links []resilient.Link
	var tuners []*tuner
	var chain *resilient.Chain
	for i, e := range endpoints {
		key := "llm"
		if i > 0 {
			key = fmt.Sprintf("llm.fallback[%d]", i-1)
		}
		k := serverKey(e)
		if limiters[k] == nil {
			limiters[k] = resilient.NewLimiter(limits[k], cfg.MaxQueued)
		}
		apiKey := o.Getenv(e.APIKeyEnv)
		p := build(e, apiKey, o, logger, key)
		for j, model := range append([]string{e.Model}, e.FallbackModels...) {
			t := newTuner(e, model, apiKey, p, o.Client, logger)
			t.link, t.warmup = len(links), e.Warmup && j == 0
			if o.Reprobe > 0 {
				t.reprobe0 = o.Reprobe
			}
			if o.Lookup != nil {
				t.lookup = o.Lookup
			}
			tuners = append(tuners, t)
			link := resilient.Link{Provider: t.provider, Model: model, Timeout: e.Timeout.Duration, LoadTimeout: e.LoadTimeout.Duration,
				Retries: *e.Retries, Limiter: limiters[k], OnWarm: func() { t.reprobe(chain) }, OnUnreachable: func() { t.lost(chain) }}
			if llm.IsLocalURL(e.BaseURL) {
				link.ColdAfter = LocalColdAfter
			}
			links = append(links, link)
		}
	}
	co := o.Chain
	co.Backoff, co.MaxBackoff, co.MaxRetryAfter = cfg.Backoff.Duration, cfg.MaxBackoff.Duration, cfg.MaxRetryAfter.Duration
	co.FailureThreshold, co.Cooldown = cfg.FailureThreshold, cfg.Cooldown.Duration
	co.Logger = logger
	chain, err := resilient.New(links, co)
	if err != nil {
		return nil, fmt.Errorf("llm config: %w", err)
	}
	logger.Info("llm providers", logChain, chain.Name())
	for _, t := range tuners {
		t.start(chain)
	}
	return chain, nil
}

// build makes one endpoint's provider. A missing key is only a warning: a
// local server needs none, and a hosted one answers with an auth error
// that names the problem. So is a key sent over plain http:// to a host
// past the LAN (a VPN's addresses may not look private).
func build(e llm.Endpoint, apiKey string, o Options, logger *slog.Logger, key string) llm.Provider {
	switch remote := !llm.IsLocalURL(e.BaseURL); {
	case apiKey == "" && remote:
		logger.Warn("no API key for a remote LLM endpoint", logKey, key, logEnv, e.APIKeyEnv, logBaseURL, e.BaseURL)
	case apiKey != "" && remote && strings.HasPrefix(strings.ToLower(e.BaseURL), "http://"):
		// Every request carries the key, and the conversation, in clear
		// text past the LAN.
		logger.Warn("API key sent unencrypted: a remote LLM endpoint over http://; use https:// (or a VPN and a private address)",
			logKey, key, logEnv, e.APIKeyEnv, logBaseURL, e.BaseURL)
	}
	switch e.Provider {
	case llm.ProviderAnthropic:
		return anthropic.New(anthropic.Options{BaseURL: e.BaseURL, Model: e.Model, APIKey: apiKey, Version: e.AnthropicVersion,
			MaxTokens: e.MaxTokens, Stream: e.Stream, IdleTimeout: e.IdleTimeout.Duration, Client: o.Client})
	default:
		return openai.New(openai.Options{BaseURL: e.BaseURL, Model: e.Model, APIKey: apiKey, MaxTokens: e.MaxTokens,
			Stream: e.Stream, IdleTimeout: e.IdleTimeout.Duration, Client: o.Client})
	}
}

// serverKey identifies the server behind an endpoint, for sharing its
// concurrency bound.
func serverKey(e llm.Endpoint) string {
	return e.Provider + " " + strings.TrimRight(strings.ToLower(e.BaseURL), "/")
}
