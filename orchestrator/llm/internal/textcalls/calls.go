package textcalls

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// argKeys name a call's arguments in the formats models write, in order of
// preference: Hermes and OpenAI say arguments, Llama 3 says parameters.
var argKeys = []string{"arguments", "parameters", "args", "input"}

// callKeys are the keys an unmarked JSON call may have.
var callKeys = map[string]bool{"name": true, "arguments": true, "parameters": true, "id": true, "type": true, "function": true}

// callsOf reads one JSON value as calls: an object naming an offered tool
// ({"name", "arguments"|"parameters"}, {"function": {"name", "arguments"}},
// {"tool_calls": [...]}) or a list of them. strict refuses objects with
// keys no call has.
func (p *parser) callsOf(raw []byte, strict bool) ([]Call, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
			return nil, false
		}
		var calls []Call
		for _, it := range items {
			cs, ok := p.callsOf(it, strict)
			if !ok {
				return nil, false
			}
			calls = append(calls, cs...)
		}
		return calls, true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	if tc, ok := m["tool_calls"]; ok && len(m) == 1 {
		return p.callsOf(tc, strict)
	}
	if strict {
		for k := range m {
			if !callKeys[k] {
				return nil, false
			}
		}
	}
	var name string
	if fn, ok := m["function"]; ok {
		if bytes.HasPrefix(bytes.TrimSpace(fn), []byte("{")) {
			// The OpenAI shape written out: {"type": "function", "function": {...}}.
			return p.callsOf(fn, strict)
		}
		if json.Unmarshal(fn, &name) != nil {
			return nil, false
		}
	}
	if n, ok := m["name"]; ok && json.Unmarshal(n, &name) != nil {
		return nil, false
	}
	if name == "" || len(name) > maxNameBytes || !p.offered(name) {
		return nil, false
	}
	c := Call{Name: name}
	for _, k := range argKeys {
		if a, ok := m[k]; ok {
			c.Arguments = llm.ArgumentText(a)
			break
		}
	}
	return []Call{c}, true
}

// Recover returns resp with the tool calls written in its text turned into
// llm.ToolCalls, when it has no structured tool calls and req offers
// tools. The text around the calls stays the message content; arguments go
// through llm.ParseArguments, so the loop validates them as it does any
// call's; ids are derived from the request's length, the call's position,
// name and arguments, so the same answer to the same request always gives
// the same ids. The finish reason becomes tool_calls. n is the number of
// calls recovered. Text holding more than llm.MaxToolCalls calls stays
// text, whole.
func Recover(resp llm.Response, req llm.Request) (_ llm.Response, n int) {
	if len(resp.Message.ToolCalls) > 0 || len(req.Tools) == 0 || resp.Message.Content == "" {
		return resp, 0
	}
	offered := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		offered[t.Name] = true
	}
	rest, calls := Parse(resp.Message.Content, func(name string) bool { return offered[name] })
	if len(calls) == 0 || len(calls) > llm.MaxToolCalls {
		return resp, 0
	}
	msg := resp.Message
	msg.Content = rest
	msg.ToolCalls = make([]llm.ToolCall, 0, len(calls))
	for i, c := range calls {
		args, argErr := llm.ParseArguments(c.Arguments)
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: callID(len(req.Messages), i, c), Name: c.Name, Arguments: args, ArgumentsError: argErr})
	}
	resp.Message = msg
	resp.FinishReason = llm.FinishToolCalls
	return resp, len(calls)
}

// callID names a recovered call: "call_text_{i}_{12 hex digits}".
func callID(turn, i int, c Call) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%d\x00%s\x00", turn, i, c.Name)
	h.Write(c.Arguments)
	return fmt.Sprintf("call_text_%d_%s", i, hex.EncodeToString(h.Sum(nil))[:12])
}
