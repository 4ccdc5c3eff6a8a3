package textcalls

import (
	"strings"
	"testing"
)

func offeredSet(names ...string) func(string) bool {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

func TestParse(t *testing.T) {
	offered := offeredSet("sysinfo", "read_file", "pi-1__sysinfo")
	tests := []struct {
		name  string
		text  string
		rest  string
		calls []string // "name args"
	}{
		{"hermes", `<tool_call>{"name": "sysinfo", "arguments": {}}</tool_call>`, "", []string{"sysinfo {}"}},
		{"hermes with text and two calls", "Checking.\n<tool_call>\n{\"name\": \"sysinfo\", \"arguments\": {\"v\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"/a\"}}\n</tool_call>\nDone soon.",
			"Checking.\n\n\nDone soon.", []string{`sysinfo {"v": 1}`, `read_file {"path": "/a"}`}},
		{"hermes two objects in one block", "<tool_call>\n{\"name\": \"sysinfo\"}\n{\"name\": \"read_file\", \"arguments\": {}}\n</tool_call>", "", []string{"sysinfo ", "read_file {}"}},
		{"hermes unclosed at the end", `<tool_call>{"name": "sysinfo", "arguments": {}}`, "", []string{"sysinfo {}"}},
		{"hermes unclosed before the next", `<tool_call>{"name": "sysinfo"}<tool_call>{"name": "read_file"}</tool_call>`, "", []string{"sysinfo ", "read_file "}},
		{"hermes fenced inside", "<tool_call>\n```json\n{\"name\": \"sysinfo\", \"arguments\": {}}\n```\n</tool_call>", "", []string{"sysinfo {}"}},
		{"hermes truncated arguments", `<tool_call>{"name": "read_file", "arguments": {"path": "/etc/ho`, "", []string{`read_file {"path": "/etc/ho`}},
		{"hermes unknown tool stays text", `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`, "", nil},
		{"hermes arguments as a string", `<tool_call>{"name": "read_file", "arguments": "{\"path\": \"/b\"}"}</tool_call>`, "", []string{`read_file {"path": "/b"}`}},
		{"openai shape written out", `<tool_call>{"type": "function", "function": {"name": "sysinfo", "arguments": "{}"}}</tool_call>`, "", []string{"sysinfo {}"}},
		{"mistral list", `[TOOL_CALLS] [{"name": "sysinfo", "arguments": {}}, {"name": "read_file", "arguments": {"path": "/c"}}]`, "", []string{"sysinfo {}", `read_file {"path": "/c"}`}},
		{"mistral v11", `[TOOL_CALLS]read_file[ARGS]{"path": "/d"}[TOOL_CALLS]sysinfo[ARGS]{}`, "", []string{`read_file {"path": "/d"}`, "sysinfo {}"}},
		{"mistral call id", `[TOOL_CALLS]sysinfo[CALL_ID]abc123456[ARGS]{"v": true}`, "", []string{`sysinfo {"v": true}`}},
		{"mistral unknown", `[TOOL_CALLS] [{"name": "nope", "arguments": {}}]`, "", nil},
		{"llama python tag", `<|python_tag|>{"name": "sysinfo", "parameters": {"v": 2}}<|eom_id|>`, "", []string{`sysinfo {"v": 2}`}},
		{"llama python tag two", `<|python_tag|>{"name": "sysinfo", "parameters": {}}; {"name": "read_file", "parameters": {"path": "/e"}}`, "", []string{"sysinfo {}", `read_file {"path": "/e"}`}},
		{"llama bare json", `{"name": "read_file", "parameters": {"path": "/f"}}`, "", []string{`read_file {"path": "/f"}`}},
		{"bare json with text", "Sure.\n{\"name\": \"sysinfo\", \"arguments\": {}}", "Sure.", []string{"sysinfo {}"}},
		{"bare tool_calls wrapper", `{"tool_calls": [{"name": "sysinfo", "arguments": {}}]}`, "", []string{"sysinfo {}"}},
		{"fenced json", "Look:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"/g\"}}\n```\nok", "Look:\n\nok", []string{`read_file {"path": "/g"}`}},
		{"fenced list", "```\n[{\"name\": \"sysinfo\"}, {\"name\": \"read_file\", \"parameters\": {}}]\n```", "", []string{"sysinfo ", "read_file {}"}},
		{"fenced other language stays", "```python\n{\"name\": \"sysinfo\", \"arguments\": {}}\n```", "", nil},
		{"answer json without a tool name", `The reading: {"name": "kitchen", "temp": 21.5}`, "", nil},
		{"answer json with a tool name and other keys", `{"name": "sysinfo", "result": "45 C"}`, "", nil},
		{"answer naming a tool in prose", "I used sysinfo and read_file.", "", nil},
		{"prose braces then a call", "Use {x} or {y; then <tool_call>{\"name\": \"sysinfo\"}</tool_call>", "Use {x} or {y; then", []string{"sysinfo "}},
		{"nested object is not a call", `{"result": {"name": "sysinfo", "arguments": {}}}`, "", nil},
		{"empty", "", "", nil},
		{"exact name only", `{"name": "SYSINFO", "arguments": {}}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, calls := Parse(tt.text, offered)
			var got []string
			for _, c := range calls {
				got = append(got, c.Name+" "+string(c.Arguments))
			}
			if strings.Join(got, "|") != strings.Join(tt.calls, "|") {
				t.Fatalf("calls = %q, want %q", got, tt.calls)
			}
			want := tt.rest
			if tt.calls == nil {
				want = tt.text
			}
			if rest != want {
				t.Fatalf("rest = %q, want %q", rest, want)
			}
		})
	}
}

func TestParseBounded(t *testing.T) {
	offered := offeredSet("sysinfo")
	call := `<tool_call>{"name": "sysinfo"}</tool_call>`
	// A call past MaxScan is not looked at; the text is kept whole.
	long := strings.Repeat("a", MaxScan) + call
	if rest, calls := Parse(long, offered); calls != nil || rest != long {
		t.Fatalf("call beyond MaxScan recovered: %d calls", len(calls))
	}
	// Before it, the call is found and the tail kept.
	text := call + strings.Repeat("b", MaxScan)
	rest, calls := Parse(text, offered)
	if len(calls) != 1 || rest != strings.Repeat("b", MaxScan) {
		t.Fatalf("calls %d rest %d bytes", len(calls), len(rest))
	}
	// Many stray braces stay linear (this would take minutes otherwise).
	braces := strings.Repeat("{", MaxScan/2) + call
	if _, calls := Parse(braces, offered); len(calls) != 1 {
		t.Fatalf("call after stray braces: %d calls", len(calls))
	}
}

// TestParseWorkBounded: text of repeated markers that never open a call
// costs at most workBudget bytes of searching, not work quadratic in its
// length (256 KiB of "<|python_tag|>{" took a node 15 s of CPU, a MiB four
// minutes, past every timeout). A call before such text is still found.
func TestParseWorkBounded(t *testing.T) {
	call := `<tool_call>{"name": "sysinfo"}</tool_call>`
	for _, unit := range []string{
		"<tool_call>", "<tool_call>{", "<|python_tag|>", "<|python_tag|>{", "<|python_tag|>[",
		"[TOOL_CALLS] [", "[TOOL_CALLS] {", "[TOOL_CALLS]sysinfo[ARGS]{", "```", "```json\n{", `{"`, "{",
		`<tool_call>{"name": "sysinfo", "arguments": `, `<|python_tag|>{"name": "sysinfo", "parameters": {"a": "`,
	} {
		text := call + strings.Repeat(unit, MaxScan/4/len(unit))
		p := &parser{s: text, offered: offeredSet("sysinfo"), budget: bareBudget}
		p.run()
		if p.work > workBudget+4*len(text) {
			t.Errorf("%q repeated: %d bytes examined, bound %d", unit, p.work, workBudget)
		}
		if len(p.calls) == 0 || p.calls[0].Name != "sysinfo" {
			t.Errorf("%q repeated: the call before it was not found: %+v", unit, p.calls)
		}
	}
}
