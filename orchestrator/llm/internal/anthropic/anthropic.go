// Package anthropic is an llm.Provider for the Anthropic Messages API
// (POST {base_url}/v1/messages) with tool use: tools are offered with an
// input_schema, the model answers with tool_use blocks, and tool results go
// back as tool_result blocks in a user message.
//
// # Mapping
//
// The system prompt is the top-level "system" field (system-role messages
// in the history are appended to it). Consecutive tool messages become one
// user message of tool_result blocks, and a user message that follows them
// joins that message as a text block, since the API wants the roles to
// alternate. Tool-call arguments that were not JSON (llm.ToolCall's
// ArgumentsError) go back as {"_invalid_arguments": "<the model's text>"},
// because tool_use input must be an object.
//
// # Concurrency
//
// A Provider is safe for concurrent use; it holds no state between calls.
package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
)

// Name is the provider's name in responses, errors and the audit trail.
const Name = "anthropic"

// Defaults of Options.
const (
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header: the API version whose
	// shapes this package speaks.
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is sent when neither the request nor Options set
	// max_tokens, which this API requires.
	DefaultMaxTokens   = 4096
	DefaultIdleTimeout = 2 * time.Minute
)

// Options configure a Provider. Zero fields take the Default* values.
type Options struct {
	// BaseURL ends before /v1/messages (default DefaultBaseURL).
	BaseURL string
	// Model is used when a request names none.
	Model string
	// APIKey is sent as x-api-key; empty sends none.
	APIKey string
	// Version is the anthropic-version header (default DefaultVersion).
	Version string
	// MaxTokens is sent when a request sets none (default DefaultMaxTokens).
	MaxTokens int
	// Stream asks for server-sent events instead of one JSON answer.
	Stream bool
	// IdleTimeout bounds the silence between two streamed events, counted
	// from the first byte of the answer (default DefaultIdleTimeout; negative
	// disables). Ignored without Stream.
	IdleTimeout time.Duration
	// Client sends the requests (default: http.DefaultClient, which has no
	// timeout of its own; the caller's context bounds each call).
	Client *http.Client
	// Now is the clock for latency and Retry-After (default time.Now).
	Now func() time.Time
}

// Provider talks to the Messages API.
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
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return &Provider{o: o}
}

// Name reports "anthropic".
func (p *Provider) Name() string { return Name }

// Complete sends one Messages request.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = p.o.Model
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = p.o.MaxTokens
	}
	h := http.Header{}
	h.Set("anthropic-version", p.o.Version)
	if p.o.APIKey != "" {
		h.Set("x-api-key", p.o.APIKey)
	}
	call := &httpc.Call{Provider: Name, Model: model, URL: p.o.BaseURL + "/v1/messages", Header: h,
		Body: encodeRequest(model, req, p.o.Stream), Client: p.o.Client, Now: p.o.Now}
	return call.Exchange(ctx, p.o.Stream, p.o.IdleTimeout, codec)
}

// codec is what this provider brings to an exchange.
var codec = httpc.Codec{ErrorMessage: errorMessage, Parse: parseResponse, ReadStream: readStream}

// errorStatus is the HTTP status Anthropic answers each error type with
// before a stream starts; an error event in a stream carries only the type.
var errorStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"overloaded_error":      529,
}

// streamErrorKind is the kind of an error event in a stream: that of the
// status its type has outside one (an overload mid-stream backs off as a
// 529 does), and a server error for a type this code does not know.
func streamErrorKind(b []byte) llm.ErrorKind {
	var v struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &v) == nil {
		if status, ok := errorStatus[v.Error.Type]; ok {
			return llm.KindForStatus(status)
		}
	}
	return llm.KindServer
}

// errorMessage extracts {"type": "error", "error": {"type", "message"}}.
func errorMessage(b []byte) string {
	var v struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil || v.Error.Message == "" {
		return ""
	}
	if v.Error.Type != "" {
		return v.Error.Type + ": " + v.Error.Message
	}
	return v.Error.Message
}
