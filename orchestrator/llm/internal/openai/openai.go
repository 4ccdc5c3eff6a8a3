// Package openai is an llm.Provider for the OpenAI-compatible chat
// completions API (POST {base_url}/chat/completions) with function calling.
// The same client serves hosted APIs and local servers: llama.cpp's server,
// Ollama's /v1 endpoint, vLLM and LM Studio. It tolerates what those servers
// really send: content null beside tool calls, tool-call arguments as a JSON
// string (the standard) or as a JSON object, missing tool-call ids, a
// finish_reason of "stop" beside tool calls, and answers content as a list
// of text parts.
//
// Tool-call arguments that are not JSON do not fail the response: see
// llm.ToolCall for how they are carried to the loop.
//
// # Concurrency
//
// A Provider is safe for concurrent use; it holds no state between calls.
// Bounding concurrency, retries and fallback belong to package resilient.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
)

// Name is the provider's name in responses, errors and the audit trail.
const Name = "openai"

// Defaults of Options.
const (
	DefaultBaseURL     = "https://api.openai.com/v1"
	DefaultIdleTimeout = 2 * time.Minute
)

// Options configure a Provider. The zero value talks to the hosted API
// without a key, which fails with an auth error: set at least BaseURL or
// APIKey.
type Options struct {
	// BaseURL ends before /chat/completions (default DefaultBaseURL), e.g.
	// "http://127.0.0.1:8080/v1" for llama.cpp, "http://127.0.0.1:11434/v1"
	// for Ollama.
	BaseURL string
	// Model is used when a request names none.
	Model string
	// APIKey is sent as a bearer token; empty sends no Authorization header
	// (local servers need none).
	APIKey string
	// Stream asks for server-sent events instead of one JSON answer.
	Stream bool
	// IdleTimeout bounds the silence between two streamed chunks, counted
	// from the first byte of the answer (default DefaultIdleTimeout; negative
	// disables). Ignored without Stream.
	IdleTimeout time.Duration
	// MaxTokens is sent as max_tokens when a request sets none; 0 leaves it
	// to the server.
	MaxTokens int
	// Client sends the requests (default: http.DefaultClient, which has no
	// timeout of its own; the caller's context bounds each call).
	Client *http.Client
	// Now is the clock for latency and Retry-After (default time.Now).
	Now func() time.Time
}

// Provider talks to one OpenAI-compatible endpoint.
type Provider struct {
	o Options
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider; it does not contact the server.
func New(o Options) *Provider {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return &Provider{o: o}
}

// Name reports "openai".
func (p *Provider) Name() string { return Name }

// Complete sends one chat completion request.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = p.o.Model
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = p.o.MaxTokens
	}
	body := encodeRequest(model, req, p.o.Stream)
	h := http.Header{}
	if p.o.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.o.APIKey)
	}
	call := &httpc.Call{Provider: Name, Model: model, URL: p.o.BaseURL + "/chat/completions", Header: h, Body: body, Client: p.o.Client, Now: p.o.Now}
	resp, err := call.Exchange(ctx, p.o.Stream, p.o.IdleTimeout, codec)
	return resp, hintV1(err, p.o.BaseURL)
}

// hintV1 adds to a 404 for the chat completions path, from a server whose
// base URL does not end in /v1, the address to try: llama.cpp, Ollama,
// vLLM and LM Studio serve the API below /v1, and a base_url without it
// gets a bare "404 page not found". The hint names only the configured
// address, quoted and then cut to 200 bytes (quoting can make a byte four,
// so the cut comes after it); the server's message stays as bounded as
// before. Other errors are returned as they are.
func hintV1(err error, baseURL string) error {
	var e *llm.Error
	if !errors.As(err, &e) || e.Status != http.StatusNotFound {
		return err
	}
	u, perr := url.Parse(baseURL)
	if perr != nil || strings.HasSuffix(u.Path, "/v1") {
		return err
	}
	quoted := func(s string) string { return llm.Excerpt(strconv.Quote(s), 200) }
	e.Message = fmt.Sprintf("%s (base_url %s does not end in /v1: OpenAI-compatible servers answer at {base_url}/chat/completions with base_url ending in /v1; try %s)",
		e.Message, quoted(baseURL), quoted(baseURL+"/v1"))
	return err
}

// codec is what this provider brings to an exchange.
var codec = httpc.Codec{ErrorMessage: errorMessage, Parse: parseResponse, ReadStream: readStream}

// errorMessage extracts the message of an error body: {"error": {"message":
// ...}} (OpenAI, vLLM, llama.cpp), {"error": "..."} (Ollama's native form)
// or {"message": ...}.
func errorMessage(b []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil && s != "" {
		return s
	}
	var o struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(v.Error, &o) == nil && o.Message != "" {
		if o.Type != "" {
			return o.Type + ": " + o.Message
		}
		return o.Message
	}
	if v.Message != "" {
		return v.Message
	}
	return v.Detail
}
