// Package scripted is an LLM provider that is not a language model: it
// replays a transcript written by hand, for offline demos and tests. Every
// answer it gives is labelled as scripted wherever evoclaw shows the provider.
//
// A transcript is a JSON file:
//
//	{"name": "demo", "turns": [
//	  {"content": "Checking.", "tool_calls": [{"id": "c1", "name": "pi-1__sysinfo", "arguments": {}}],
//	   "expect_tools": ["pi-1__sysinfo"]},
//	  {"content": "Pi 1 says: {{result c1}}"}
//	]}
//
// The n-th assistant message of a conversation is turn n. A turn's
// expect_tools must all be offered in the request, or the call fails with a
// clear error instead of replaying nonsense. In content, {{result ID}} is
// replaced by the tool message answering call ID, {{last_result}} by the
// latest tool message and {{user}} by the latest user message.
//
// With "text_tool_calls": true at the top level, a turn's content may
// write tool calls as text, as local models do
// (<tool_call>{"name": ..., "arguments": {...}}</tool_call>, or any format
// of package textcalls); they are recovered exactly as for a real
// OpenAI-compatible server, with generated ids (use {{last_result}} to
// quote their results).
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/textcalls"
)

// Label is how the provider names itself.
const Label = "scripted (offline transcript, not a language model)"

// ErrExhausted is returned when a conversation goes past the transcript.
var ErrExhausted = errors.New("scripted transcript exhausted")

// Turn is one scripted assistant message.
type Turn struct {
	Content     string         `json:"content"`
	ToolCalls   []TurnToolCall `json:"tool_calls,omitempty"`
	ExpectTools []string       `json:"expect_tools,omitempty"`
}

// TurnToolCall is a scripted tool call; Arguments is any JSON value and is
// passed on (compacted when valid JSON), so a transcript can also script
// invalid arguments.
type TurnToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Transcript is a parsed transcript file.
type Transcript struct {
	Name  string `json:"name"`
	Turns []Turn `json:"turns"`
	// TextToolCalls recovers tool calls written in a turn's content.
	TextToolCalls bool `json:"text_tool_calls,omitempty"`
}

// Provider replays a Transcript. It is safe for concurrent use: it keeps no
// state between calls.
type Provider struct {
	t Transcript
}

var _ llm.Provider = (*Provider)(nil)

// Load reads a transcript file.
func Load(path string) (*Provider, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return Parse(b)
}

// Parse parses transcript JSON.
func Parse(b []byte) (*Provider, error) {
	var t Transcript
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("parse transcript: %w", err)
	}
	if len(t.Turns) == 0 {
		return nil, fmt.Errorf("parse transcript %q: no turns", t.Name)
	}
	for i, turn := range t.Turns {
		for j, c := range turn.ToolCalls {
			if c.ID == "" || c.Name == "" {
				return nil, fmt.Errorf("parse transcript %q: turns[%d].tool_calls[%d]: id and name are required", t.Name, i, j)
			}
		}
	}
	return &Provider{t: t}, nil
}

// Name reports the provider label.
func (p *Provider) Name() string { return Label }

var placeholder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\{\{\s*(result\s+([^\s}]+)|user|last_result)\s*\}\}`)
})

// Complete returns the turn that matches the number of assistant messages
// already in the conversation.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	n := 0
	var lastUser, lastResult string
	results := map[string]string{}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			n++
		case llm.RoleUser:
			lastUser = m.Content
		case llm.RoleTool:
			results[m.ToolCallID] = m.Content
			lastResult = m.Content
		}
	}
	if n >= len(p.t.Turns) {
		return llm.Response{}, fmt.Errorf("%w: %q has %d turns, conversation wants turn %d", ErrExhausted, p.t.Name, len(p.t.Turns), n+1)
	}
	turn := p.t.Turns[n]
	offered := map[string]bool{}
	for _, d := range req.Tools {
		offered[d.Name] = true
	}
	for _, want := range turn.ExpectTools {
		if !offered[want] {
			names := make([]string, 0, len(req.Tools))
			for _, d := range req.Tools {
				names = append(names, d.Name)
			}
			return llm.Response{}, fmt.Errorf("scripted transcript %q turn %d expects tool %q, but the request offers %v", p.t.Name, n+1, want, names)
		}
	}
	content := placeholder().ReplaceAllStringFunc(turn.Content, func(s string) string {
		m := placeholder().FindStringSubmatch(s)
		switch m[1] {
		case "user":
			return lastUser
		case "last_result":
			return strings.TrimSpace(lastResult)
		}
		if r, ok := results[m[2]]; ok {
			return strings.TrimSpace(r)
		}
		return "(no result for " + m[2] + ")"
	})
	msg := llm.Message{Role: llm.RoleAssistant, Content: content}
	for _, c := range turn.ToolCalls {
		args := c.Arguments
		var buf bytes.Buffer
		switch {
		case len(args) == 0:
			args = json.RawMessage("{}")
		case json.Compact(&buf, args) == nil:
			args = buf.Bytes()
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	resp := llm.Response{Message: msg, Model: "scripted:" + p.t.Name, Usage: llm.Usage{
		InputTokens:  int64(approxTokens(req)),
		OutputTokens: int64(len(content)/4 + 1),
	}}
	if p.t.TextToolCalls {
		resp, _ = textcalls.Recover(resp, req)
	}
	return resp, nil
}

// approxTokens estimates the request size the way a rough tokenizer would
// (4 bytes a token), so that cost reports have plausible numbers. It adds
// up the request's strings instead of encoding it: the encoding (every
// tool schema, every message) was the scripted model's whole cost, on the
// path of every round trip `evoclaw bench` measures.
func approxTokens(req llm.Request) int {
	// The constants stand for the JSON keys and punctuation around each.
	n := 40 + len(req.Model) + len(req.System)
	for _, m := range req.Messages {
		n += 40 + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name)
		for _, p := range m.Parts {
			n += 30 + len(p.Type) + len(p.Text) + len(p.MIMEType) + len(p.Data)
		}
		for _, c := range m.ToolCalls {
			n += 40 + len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += 40 + len(t.Name) + len(t.Description) + approxSize(t.Parameters)
	}
	return n/4 + 1
}

// approxSize is about the length of v encoded as JSON.
func approxSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 2
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + 4 + approxSize(e)
		}
		return n
	case []any:
		n := 2
		for _, e := range v {
			n += approxSize(e) + 1
		}
		return n
	case []string:
		n := 2
		for _, e := range v {
			n += len(e) + 3
		}
		return n
	}
	return 5
}
