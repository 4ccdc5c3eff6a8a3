package textcalls

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/openai"
)

func request() llm.Request {
	return llm.Request{Model: "local", Tools: llmtest.Tools(), Messages: []llm.Message{{Role: llm.RoleUser, Content: "How is pi-1?"}}}
}

// serve answers with one recorded pair through the OpenAI provider wrapped
// with s.
func serve(t *testing.T, pair string, s Settings, stream bool) *Provider {
	t.Helper()
	srv := llmtest.Serve(t, llmtest.Load(t, "textcalls/"+pair))
	return Wrap(openai.New(openai.Options{BaseURL: srv.URL + "/v1", Stream: stream}), s)
}

func TestRecordedFormats(t *testing.T) {
	tests := []struct {
		pair    string
		stream  bool
		content string
		calls   []string // "name args"
		argErr  bool
	}{
		{"hermes.json", false, "I'll check both.", []string{`pi-1__sysinfo {"verbose":true}`, `pi-1__read_file {"path":"/proc/loadavg"}`}, false},
		{"mistral.json", false, "", []string{`pi-1__read_file {"path":"/etc/hostname"}`}, false},
		{"llama_python_tag.json", false, "", []string{`pi-1__sysinfo {"verbose":false}`}, false},
		{"llama_json.json", false, "", []string{`pi-1__read_file {"path":"/proc/cpuinfo"}`}, false},
		{"fenced.json", false, "Let me look at the file.", []string{`pi-1__read_file {"path":"/boot/config.txt"}`}, false},
		{"json_answer.json", false, `Here is the reading: {"name": "kitchen", "temp": 21.5}`, nil, false},
		{"hermes_truncated.json", false, "", []string{`pi-1__read_file "{\"path\": \"/etc/ho"`}, true},
		{"stream_hermes.json", true, "I'll check.", []string{`pi-1__sysinfo {}`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.pair, func(t *testing.T) {
			p := serve(t, tt.pair, Settings{Recover: true}, tt.stream)
			r, err := p.Complete(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range r.Message.ToolCalls {
				got = append(got, c.Name+" "+string(c.Arguments))
				if !strings.HasPrefix(c.ID, "call_text_") || (c.ArgumentsError != "") != tt.argErr {
					t.Fatalf("call %+v", c)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.calls, "|") || r.Message.Content != tt.content {
				t.Fatalf("calls %q content %q, want %q %q", got, r.Message.Content, tt.calls, tt.content)
			}
			if len(tt.calls) > 0 && r.FinishReason != llm.FinishToolCalls {
				t.Fatalf("finish %q", r.FinishReason)
			}
		})
	}
}

func TestRecoverOff(t *testing.T) {
	p := serve(t, "hermes.json", Settings{}, false)
	r, err := p.Complete(context.Background(), request())
	if err != nil || len(r.Message.ToolCalls) != 0 || !strings.Contains(r.Message.Content, "<tool_call>") {
		t.Fatalf("r = %+v err %v", r, err)
	}
}

func TestIDsStable(t *testing.T) {
	resp := llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: `<tool_call>{"name": "pi-1__sysinfo"}</tool_call>`}}
	a, _ := Recover(resp, request())
	b, _ := Recover(resp, request())
	if a.Message.ToolCalls[0].ID != b.Message.ToolCalls[0].ID {
		t.Fatal("ids differ for the same answer")
	}
	later := request()
	later.Messages = append(later.Messages, a.Message, llm.Message{Role: llm.RoleTool, ToolCallID: a.Message.ToolCalls[0].ID, Content: "ok"})
	c, _ := Recover(resp, later)
	if c.Message.ToolCalls[0].ID == a.Message.ToolCalls[0].ID {
		t.Fatal("the same call in a later turn reuses an id")
	}
}

func TestStructuredCallsUntouched(t *testing.T) {
	resp := llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: `<tool_call>{"name": "pi-1__sysinfo"}</tool_call>`,
		ToolCalls: []llm.ToolCall{{ID: "x", Name: "pi-1__read_file", Arguments: json.RawMessage(`{}`)}}}}
	if r, n := Recover(resp, request()); n != 0 || len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].ID != "x" {
		t.Fatalf("structured answer changed: %+v", r.Message)
	}
}

func TestPromptMode(t *testing.T) {
	var sent llm.Request
	next := providerFunc(func(_ context.Context, req llm.Request) (llm.Response, error) {
		sent = req
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "<tool_call>\n{\"name\": \"pi-1__sysinfo\", \"arguments\": {}}\n</tool_call>"}}, nil
	})
	p := Wrap(next, Settings{Prompt: true})
	req := request()
	req.System = "Be brief."
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: "Looking.", ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "pi-1__read_file", Arguments: json.RawMessage(`{"path":"/x"}`)},
			{ID: "b", Name: "pi-1__read_file", Arguments: json.RawMessage(`"{\"pa"`), ArgumentsError: "bad"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "a", Content: "hello"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "b", Content: "error (invalid_params)"},
	)
	r, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent.Tools) != 0 || !strings.HasPrefix(sent.System, "Be brief.\n\n# Tools") || !strings.Contains(sent.System, `"name":"pi-1__read_file"`) {
		t.Fatalf("system %q tools %d", sent.System, len(sent.Tools))
	}
	if len(sent.Messages) != 3 || sent.Messages[1].Content != "Looking.\n<tool_call>\n{\"name\":\"pi-1__read_file\",\"arguments\":{\"path\":\"/x\"}}\n</tool_call>\n<tool_call>\n{\"name\":\"pi-1__read_file\",\"arguments\":\"{\\\"pa\"}\n</tool_call>" ||
		sent.Messages[2].Role != llm.RoleUser || sent.Messages[2].Content != "<tool_response>\nhello\n</tool_response>\n<tool_response>\nerror (invalid_params)\n</tool_response>" {
		t.Fatalf("messages %+v", sent.Messages)
	}
	if len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Name != "pi-1__sysinfo" {
		t.Fatalf("prompt mode must recover calls: %+v", r.Message)
	}
}

type providerFunc func(context.Context, llm.Request) (llm.Response, error)

func (f providerFunc) Name() string { return "func" }
func (f providerFunc) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f(ctx, req)
}

// In prompt mode a result's image stays inside its <tool_response> tags,
// in a user message with parts; the text of the merged message is the
// same as without images.
func TestPromptModeImages(t *testing.T) {
	var sent llm.Request
	next := providerFunc(func(_ context.Context, req llm.Request) (llm.Response, error) {
		sent = req
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "A green pixel."}}, nil
	})
	req := llmtest.ImageRequest("local", "c_")
	req.Messages[2], req.Messages[3] = req.Messages[3], req.Messages[2] // the text result first
	if _, err := Wrap(next, Settings{Prompt: true}).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	m := sent.Messages[len(sent.Messages)-1]
	wantText := "<tool_response>\ntemp=45.6'C load=0.12\n</tool_response>\n<tool_response>\ngreenhouse.png, 1x1 pixels\n[image image/png, 96 base64 bytes]\n</tool_response>"
	if len(sent.Messages) != 3 || m.Role != llm.RoleUser || m.Content != wantText {
		t.Fatalf("messages %+v", sent.Messages)
	}
	want := []llm.Part{
		llm.TextPart("<tool_response>\ntemp=45.6'C load=0.12\n</tool_response>\n<tool_response>\ngreenhouse.png, 1x1 pixels"),
		llm.ImagePart("image/png", llmtest.PNG),
		llm.TextPart("\n</tool_response>"),
	}
	if len(m.Parts) != len(want) {
		t.Fatalf("parts %+v", m.Parts)
	}
	for i := range want {
		if m.Parts[i] != want[i] {
			t.Fatalf("part %d = %+v, want %+v", i, m.Parts[i], want[i])
		}
	}
	if req.Messages[2].Parts != nil || len(req.Messages[3].Parts) != 2 {
		t.Fatal("the request given was modified")
	}
}

// TestRecoverBounded: text with more than llm.MaxToolCalls calls stays
// text (15,358 recovered calls once reached the tool loop from one answer).
func TestRecoverBounded(t *testing.T) {
	for _, n := range []int{llm.MaxToolCalls, llm.MaxToolCalls + 1, 15000} {
		content := strings.Repeat(`<tool_call>{"name": "pi-1__sysinfo"}</tool_call>`, n)
		resp := llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: content}}
		r, got := Recover(resp, request())
		want := n
		if n > llm.MaxToolCalls {
			want = 0
		}
		if got != want || len(r.Message.ToolCalls) != want || (want == 0 && r.Message.Content != content) {
			t.Errorf("%d calls written: recovered %d (%d in the message), want %d", n, got, len(r.Message.ToolCalls), want)
		}
	}
}
