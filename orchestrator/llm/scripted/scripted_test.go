package scripted

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

func TestTurnsFollowAssistantMessages(t *testing.T) {
	p, err := Load("../../../testdata/transcripts/two-turns.json")
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.ToolDef{{Name: "a__t"}}
	r1, err := p.Complete(context.Background(), llm.Request{Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Message.ToolCalls) != 1 || r1.Message.ToolCalls[0].ID != "c1" || string(r1.Message.ToolCalls[0].Arguments) != `{"x":1}` {
		t.Fatalf("turn 1: %+v", r1.Message)
	}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hello"}, r1.Message, {Role: llm.RoleTool, ToolCallID: "c1", Content: "  42\n"}}
	r2, err := p.Complete(context.Background(), llm.Request{Tools: tools, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Message.Content != "You said hello; the tool said 42; missing: (no result for c9)" || len(r2.Message.ToolCalls) != 0 {
		t.Fatalf("turn 2: %q", r2.Message.Content)
	}
	msgs = append(msgs, r2.Message)
	if _, err := p.Complete(context.Background(), llm.Request{Messages: msgs}); !errors.Is(err, ErrExhausted) {
		t.Fatalf("past the end: %v", err)
	}
}

func TestExpectToolsFailsClearly(t *testing.T) {
	p, err := Load("../../../testdata/transcripts/two-turns.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), llm.Request{Tools: []llm.ToolDef{{Name: "other"}}})
	if err == nil || !strings.Contains(err.Error(), `expects tool "a__t"`) || !strings.Contains(err.Error(), "other") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	tests := map[string]string{
		"empty":           `{"name":"x","turns":[]}`,
		"unknown field":   `{"name":"x","turns":[{"content":"a","bogus":1}]}`,
		"call without id": `{"name":"x","turns":[{"tool_calls":[{"name":"t"}]}]}`,
		"not json":        `turns: 1`,
	}
	for name, src := range tests {
		if _, err := Parse([]byte(src)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBuiltinDemoParses(t *testing.T) {
	p, err := Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != Label || !strings.Contains(Label, "not a language model") {
		t.Fatalf("label %q must say it is not a model", p.Name())
	}
	if _, err := Builtin("nope"); err == nil {
		t.Fatal("unknown built-in accepted")
	}
}

func TestTextToolCalls(t *testing.T) {
	p, err := Parse([]byte(`{"name": "text", "text_tool_calls": true, "turns": [
	  {"content": "Reading.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>", "expect_tools": ["read"]},
	  {"content": "It says: {{last_result}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Tools: []llm.ToolDef{{Name: "read"}}, Messages: []llm.Message{{Role: llm.RoleUser, Content: "note?"}}}
	r1, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	calls := r1.Message.ToolCalls
	if len(calls) != 1 || calls[0].Name != "read" || string(calls[0].Arguments) != `{"path":"notes.txt"}` || r1.Message.Content != "Reading." {
		t.Fatalf("turn 1: %+v", r1.Message)
	}
	req.Messages = append(req.Messages, r1.Message, llm.Message{Role: llm.RoleTool, ToolCallID: calls[0].ID, Content: "pump at night\n"})
	r2, err := p.Complete(context.Background(), req)
	if err != nil || r2.Message.Content != "It says: pump at night" {
		t.Fatalf("turn 2: %+v %v", r2.Message, err)
	}
}

func TestOfflineSaysSo(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
		want  string
	}{
		{"no tools", nil, "Tools it could use once it has one: none"},
		{"tools sorted", []string{"pi-2__b", "pi-1__a"}, "Tools it could use once it has one: pi-1__a, pi-2__b."},
		{"many tools bounded", func() []string {
			var n []string
			for i := range 30 {
				n = append(n, fmt.Sprintf("t%02d", i))
			}
			return n
		}(), "t19 and 10 more."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var defs []llm.ToolDef
			for _, n := range tt.tools {
				defs = append(defs, llm.ToolDef{Name: n})
			}
			// Any turn: it never answers (a reply a client could take for a
			// model's) and never calls a tool; it fails, saying why.
			msgs := []llm.Message{{Role: llm.RoleUser, Content: "a"}, {Role: llm.RoleAssistant, Content: "b"}, {Role: llm.RoleUser, Content: "c"}}
			r, err := Offline{}.Complete(context.Background(), llm.Request{Messages: msgs, Tools: defs})
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != llm.KindNotConfigured || le.Retryable() || r.Message.Content != "" || len(r.Message.ToolCalls) != 0 {
				t.Fatalf("want a not_configured error and no reply, got %+v, %v", r, err)
			}
			for _, want := range []string{tt.want, "no language model is configured on this node", "[llm] in evoclaw.toml", "docs/LLM.md"} {
				if !strings.Contains(le.Message, want) {
					t.Errorf("message %q lacks %q", le.Message, want)
				}
			}
		})
	}
}
