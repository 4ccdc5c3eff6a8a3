package textcalls

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// FuzzParse checks that any text parses without panicking, that every call
// names an offered tool and that recovered responses stay well formed.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(llmtest.Dir, "textcalls", "*.json"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		var p struct {
			Response struct {
				Choices []struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				} `json:"choices"`
			} `json:"response"`
		}
		if json.Unmarshal(b, &p) == nil && len(p.Response.Choices) > 0 {
			f.Add(p.Response.Choices[0].Message.Content)
		}
	}
	for _, s := range []string{
		`[TOOL_CALLS]t[ARGS]{"a":`, `<|python_tag|>{"name":"t"};{`, "```json\n[{\"name\":\"t\"}]\n```", `{"tool_calls":[{"function":{"name":"t","arguments":"{"}}]}`,
		`<tool_call>{"name":"t","arguments":{"x":"\"}"}}</tool_call>`, `{{{{"name":"t"}`, `[TOOL_CALLS] {"name":"t"}`,
	} {
		f.Add(s)
	}
	req := llm.Request{Tools: []llm.ToolDef{{Name: "t"}, {Name: "pi-1__sysinfo"}, {Name: "pi-1__read_file"}}}
	f.Fuzz(func(t *testing.T, text string) {
		resp, n := Recover(llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}}, req)
		if n != len(resp.Message.ToolCalls) {
			t.Fatalf("n = %d, calls %d", n, len(resp.Message.ToolCalls))
		}
		if n == 0 {
			if resp.Message.Content != text {
				t.Fatal("text changed without calls")
			}
			return
		}
		if len(resp.Message.Content) > len(text) {
			t.Fatal("content grew")
		}
		ids := map[string]bool{}
		for _, c := range resp.Message.ToolCalls {
			if c.Name != "t" && !strings.HasPrefix(c.Name, "pi-1__") {
				t.Fatalf("call of a tool not offered: %q", c.Name)
			}
			if !json.Valid(c.Arguments) || ids[c.ID] {
				t.Fatalf("bad call %+v", c)
			}
			ids[c.ID] = true
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatal(err)
		}
	})
}
