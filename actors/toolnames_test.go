package actors

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// providerToolName is OpenAI's rule, the strictest of the providers.
var providerToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolNamesForProviders(t *testing.T) {
	long := strings.Repeat("a", 48) + "__" + "filesystem__read_text_file_with_a_long_name"
	dotted := "pi-1__files.read"
	tests := []struct {
		name     string
		in       []string
		keepSame []string // names sent unchanged
	}{
		{"valid names unchanged", []string{"pi-1__sysinfo", "edge_call"}, []string{"pi-1__sysinfo", "edge_call"}},
		{"too long", []string{long, "edge_call"}, []string{"edge_call"}},
		{"bad characters", []string{dotted, "pi-1__files_read"}, []string{"pi-1__files_read"}},
		{"two long names that share their first 64 bytes", []string{long + "_one", long + "_two"}, nil},
		{"unicode and spaces", []string{"pi-1__température du four", "x y"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var defs []llm.ToolDef
			for _, n := range tt.in {
				defs = append(defs, llm.ToolDef{Name: n})
			}
			names, out := newToolNames(defs)
			seen := map[string]bool{}
			for i, d := range out {
				if !providerToolName.MatchString(d.Name) {
					t.Errorf("%q sent as %q, which providers refuse", tt.in[i], d.Name)
				}
				if seen[d.Name] {
					t.Errorf("two tools sent as %q", d.Name)
				}
				seen[d.Name] = true
				if got := names.original(d.Name); got != tt.in[i] {
					t.Errorf("%q routes back to %q, want %q", d.Name, got, tt.in[i])
				}
			}
			for _, n := range tt.keepSame {
				if !seen[n] {
					t.Errorf("valid name %q was renamed", n)
				}
			}
			// The same set in another order maps the same way.
			rev := append([]llm.ToolDef(nil), defs...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			_, out2 := newToolNames(rev)
			for i := range out2 {
				if out2[i].Name != out[len(out)-1-i].Name {
					t.Errorf("order changed the mapping: %q vs %q", out2[i].Name, out[len(out)-1-i].Name)
				}
			}
		})
	}
}

func TestToolNameAliasCannotTakeAValidName(t *testing.T) {
	odd := "pi-1__a.b"
	alias := aliasToolName(odd, 8)
	// A real tool that happens to be named like the alias keeps its name;
	// the odd one gets a longer alias.
	names, out := newToolNames([]llm.ToolDef{{Name: odd}, {Name: alias}})
	if out[1].Name != alias || out[0].Name == alias || names.original(out[0].Name) != odd || names.original(alias) != alias {
		t.Fatalf("mapping %+v", out)
	}
}

// firstToolProvider calls the first offered tool other than edge_call with
// {"text":"x"}, then answers with text.
type firstToolProvider struct {
	mu    sync.Mutex
	calls int
	sent  []string
}

func (p *firstToolProvider) Name() string { return "first-tool" }

func (p *firstToolProvider) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	for _, d := range req.Tools {
		p.sent = append(p.sent, d.Name)
	}
	if p.calls == 1 {
		for _, d := range req.Tools {
			if d.Name != EdgeCallTool {
				return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
					{ID: "k1", Name: d.Name, Arguments: json.RawMessage(`{"text":"x"}`)}}}}, nil
			}
		}
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "done"}}, nil
}

func TestLongToolNameRoutesAndAuditsReadably(t *testing.T) {
	tool := "server__" + strings.Repeat("very_long_tool_name_", 4) + "v1.2"
	prov := &firstToolProvider{}
	h := newHarnessTools(t, echoTranscript, []wire.ToolInfo{{Name: tool, Description: "d",
		Parameters: map[string]any{"type": "object"}}}, func(o *ConvOptions) { o.Provider = prov })
	var got []string
	var mu sync.Mutex
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
		mu.Lock()
		got = append(got, p.Tool)
		mu.Unlock()
		echoReply(h)(cmd, p)
	}
	ans := h.chat(t, "go")
	if ans.Err != nil || ans.Text != "done" {
		t.Fatalf("answer %+v", ans)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != tool {
		t.Fatalf("agent got %v, want one call of %q", got, tool)
	}
	for _, n := range prov.sent {
		if !providerToolName.MatchString(n) {
			t.Fatalf("sent tool name %q", n)
		}
	}
	recs := h.audit.All()
	if len(recs) != 1 || recs[0].Tool != "pi-1"+ToolSep+tool || recs[0].AgentID != "pi-1" || recs[0].Status != "success" {
		t.Fatalf("audit %+v", recs)
	}
}
