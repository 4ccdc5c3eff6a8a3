// Package llm defines what the tool loop needs from a language model: a
// provider that completes a chat with tool definitions, and the message
// shapes of that chat. Concrete providers live in subpackages.
//
// Apart from Provider, Request, Sampling, Response, Message and ToolCall,
// which the signatures of the embedding API use (docs/EMBEDDING.md), this
// package is part of evoclaw's implementation: other top-level folders of
// evoclaw share it, so it cannot live in an internal/ folder, and it may
// change without notice.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
)

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message. An assistant message may carry tool calls; a
// tool message answers one of them by ToolCallID.
//
// Content is always the whole message as text. A message that holds images
// (a tool result of a camera or of reading a PNG) also has Parts: its
// content in order, text and images; Content then describes each image in
// words, and is what a provider configured as text-only sends. Messages
// without images have no Parts.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// Parts is the content with its images, in order; nil when the message
	// is text only (see Message).
	Parts      []Part     `json:"parts,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on tool messages.
	Name string `json:"name,omitempty"`
	// IsError marks a tool message that reports a failure. Providers whose
	// API can say so pass it on (Anthropic's tool_result is_error); the
	// content must describe the failure either way.
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is a model's request to run a tool. Arguments is the JSON the
// model produced, validated by the loop before anything runs.
//
// Arguments is always valid JSON, so a history holding it can be marshalled
// and persisted. When a model produced text that is not JSON (a truncated or
// hallucinated object), providers keep that text verbatim as a JSON string
// (`"{\"path\": "` becomes the JSON string of those bytes) and set
// ArgumentsError to the parse error. The loop then sees "not a JSON object"
// and answers the call with invalid_params instead of failing the whole
// response; when the history is sent back, providers return the original text
// to the model so it can see its own mistake.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// ArgumentsError is empty when Arguments is what the model meant; else
	// it says why the model's text was not JSON.
	ArgumentsError string `json:"arguments_error,omitempty"`
}

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// Request is one completion request.
type Request struct {
	Model     string    `json:"model,omitempty"`
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	Tools     []ToolDef `json:"tools,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	// Sampling are the client's sampling hints for this completion; each
	// provider sends those its API takes.
	Sampling Sampling `json:"sampling,omitzero"`
}

// Sampling are the sampling hints of a chat, in the ranges of OpenAI's
// API; nil is not given: the model server's own setting applies.
type Sampling struct {
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"top_p,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
}

// Usage counts tokens of one completion.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Finish reasons, normalised across providers. A provider's own value that
// has no equivalent is passed through as is.
const (
	FinishStop      = "stop"       // the model ended its answer
	FinishToolCalls = "tool_calls" // the model wants tools run
	FinishLength    = "length"     // cut at max_tokens or the context size
	FinishFiltered  = "content_filter"
)

// MaxToolCalls bounds the tool calls of one answer taken from a model
// server. The tool loop runs at most 64 a turn and answers each further
// one with an error, audited: 100,000 calls in one answer of 8 MB cost a
// node 23 s and 446 MB. An HTTP provider fails an answer with more as
// malformed; calls written as text past it stay text.
const MaxToolCalls = 256

// Response is a completion: one assistant message, possibly with tool calls.
type Response struct {
	Message Message `json:"message"`
	// Model is the model that answered, as the server names it (it may be
	// more precise than the requested one); falls back to the requested one.
	Model string `json:"model,omitempty"`
	Usage Usage  `json:"usage"`
	// Provider names the provider that answered ("openai", "anthropic",
	// "scripted"); behind a fallback chain it is the link that answered.
	Provider string `json:"provider,omitempty"`
	// FinishReason is why the model stopped (Finish* or the server's value).
	FinishReason string `json:"finish_reason,omitempty"`
	// Latency is the time of the HTTP exchange that produced the answer,
	// excluding queueing and earlier failed attempts.
	Latency time.Duration `json:"latency,omitempty"`
	// Attempts counts HTTP exchanges behind this answer (retries and
	// fallbacks included); zero from providers that do not count.
	Attempts int `json:"attempts,omitempty"`
	// Failed are the exchanges behind this answer that failed before a
	// retry or a fallback answered, oldest first (a fallback chain fills
	// it): the audit trail keeps a row for each.
	Failed []FailedAttempt `json:"failed,omitempty"`
}

// FailedAttempt is one failed exchange with one model.
type FailedAttempt struct {
	Provider string        `json:"provider"`
	Model    string        `json:"model,omitempty"`
	End      time.Time     `json:"end"`
	Latency  time.Duration `json:"latency"`
	Kind     ErrorKind     `json:"kind"`
	Error    string        `json:"error"`
}

// Provider completes chats. Complete must honour ctx cancellation and be
// safe for concurrent use.
type Provider interface {
	// Name identifies the provider in logs and the audit trail.
	Name() string
	Complete(ctx context.Context, req Request) (Response, error)
}

// ParseArguments turns the text a model produced for a tool call into
// ToolCall.Arguments and ToolCall.ArgumentsError: compacted JSON when the
// text is JSON ("{}" when it is blank), else the text kept as a JSON string
// with the parse error. A JSON string that holds a JSON object (arguments
// encoded twice, as small local models write them) gives that object.
func ParseArguments(text []byte) (json.RawMessage, string) {
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return json.RawMessage("{}"), ""
	}
	if text[0] == '"' {
		var inner string
		if json.Unmarshal(text, &inner) == nil {
			if in := bytes.TrimSpace([]byte(inner)); len(in) > 0 && in[0] == '{' && json.Valid(in) {
				text = in
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, text); err != nil {
		quoted, _ := json.Marshal(string(text)) // strings always marshal
		return quoted, "arguments are not valid JSON: " + err.Error()
	}
	return buf.Bytes(), ""
}

// ArgumentText is the argument text a server sent as a JSON value: the
// contents of a string (the OpenAI wire form, arguments encoded as a JSON
// string), else the JSON itself, as some servers and models write an
// object; nil for null or nothing. Feed it to ParseArguments.
func ArgumentText(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	}
	return raw
}

// ArgumentsText is the text the model produced for the call: the JSON of its
// arguments, or the original text when it was not JSON (see ToolCall).
func (c ToolCall) ArgumentsText() string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	if c.ArgumentsError != "" {
		var s string
		if json.Unmarshal(c.Arguments, &s) == nil {
			return s
		}
	}
	return string(c.Arguments)
}
