package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/sse"
)

func turn1() llm.Request {
	return llm.Request{Model: "gpt-4o-mini", System: "You run tools on Raspberry Pis.", MaxTokens: 512, Tools: llmtest.Tools(),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Check the CPU temperature"}}}
}

func turn2() llm.Request {
	r := turn1()
	r.Messages = append(r.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "call_abc123", Name: "pi-1__sysinfo", Arguments: json.RawMessage(`{"verbose":true}`)},
			{ID: "call_def456", Name: "pi-1__read_file", Arguments: json.RawMessage(`"{\"path\": \"/etc/host"`), ArgumentsError: "arguments are not valid JSON: unexpected end of JSON input"},
		}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_abc123", Name: "pi-1__sysinfo", Content: "temp=45.6'C load=0.12"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_def456", Name: "pi-1__read_file", Content: "error (invalid_params): arguments are not a JSON object", IsError: true},
	)
	return r
}

func serve(t *testing.T, o Options, pairs ...string) (*Provider, *llmtest.Server) {
	t.Helper()
	s := llmtest.ServeFiles(t, "openai", pairs...)
	o.BaseURL = s.URL + "/v1"
	return New(o), s
}

func TestToolCallRoundTrip(t *testing.T) {
	p, s := serve(t, Options{APIKey: "sk-test"}, "tool_call.json", "tool_result.json")
	r1, err := p.Complete(context.Background(), turn1())
	if err != nil {
		t.Fatal(err)
	}
	want := llm.ToolCall{ID: "call_abc123", Name: "pi-1__sysinfo", Arguments: json.RawMessage(`{"verbose":true}`)}
	if len(r1.Message.ToolCalls) != 1 || !sameCall(r1.Message.ToolCalls[0], want) {
		t.Fatalf("tool calls = %+v", r1.Message.ToolCalls)
	}
	if r1.Message.Content != "" || r1.Message.Role != llm.RoleAssistant || r1.FinishReason != llm.FinishToolCalls {
		t.Fatalf("message = %+v finish %q", r1.Message, r1.FinishReason)
	}
	if r1.Usage != (llm.Usage{InputTokens: 82, OutputTokens: 17}) || r1.Model != "gpt-4o-mini-2024-07-18" || r1.Provider != "openai" || r1.Attempts != 1 {
		t.Fatalf("response = %+v", r1)
	}
	req := turn2()
	req.Sampling = llm.Sampling{Temperature: ptr(0.0), TopP: ptr(0.9), FrequencyPenalty: ptr(0.5), PresencePenalty: ptr(-0.5), Seed: ptr(int64(7))}
	r2, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Message.Content != "The CPU is at 45.6 °C." || len(r2.Message.ToolCalls) != 0 || r2.FinishReason != llm.FinishStop {
		t.Fatalf("turn 2 = %+v", r2)
	}
	if s.Requests() != 2 {
		t.Fatalf("requests = %d", s.Requests())
	}
}

func ptr[T any](v T) *T { return &v }

func TestLocalServerQuirks(t *testing.T) {
	p, _ := serve(t, Options{Model: "qwen2.5:1.5b"}, "local_quirks.json", "local_quirks.json")
	r, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "load?"}}, Tools: llmtest.Tools()})
	if err != nil {
		t.Fatal(err)
	}
	calls := r.Message.ToolCalls
	if len(calls) != 2 || calls[0].Name != "pi-1__sysinfo" || string(calls[0].Arguments) != `{"verbose":true}` ||
		calls[1].Name != "pi-1__read_file" || string(calls[1].Arguments) != `{"path":"/proc/loadavg"}` {
		t.Fatalf("calls = %+v", calls)
	}
	if !strings.HasPrefix(calls[0].ID, "call_0_") || calls[1].ID != "7" {
		t.Fatalf("ids: %q (generated) and %q (numeric id as text)", calls[0].ID, calls[1].ID)
	}
	if r.FinishReason != llm.FinishToolCalls {
		t.Fatalf("finish %q, want tool_calls", r.FinishReason)
	}
	again, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "load?"}}, Tools: llmtest.Tools()})
	if err != nil {
		t.Fatal(err)
	}
	if again.Message.ToolCalls[0].ID != calls[0].ID {
		t.Fatalf("ids not stable: %q then %q", calls[0].ID, again.Message.ToolCalls[0].ID)
	}
}

func TestInvalidArgumentsKept(t *testing.T) {
	p, _ := serve(t, Options{}, "invalid_arguments.json")
	r, err := p.Complete(context.Background(), turn1())
	if err != nil {
		t.Fatal(err)
	}
	calls := r.Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	bad := calls[0]
	if bad.ArgumentsError == "" || !json.Valid(bad.Arguments) || bad.ArgumentsText() != `{"path": "/etc/host` {
		t.Fatalf("invalid call = %+v (text %q)", bad, bad.ArgumentsText())
	}
	var obj map[string]any
	if json.Unmarshal(bad.Arguments, &obj) == nil {
		t.Fatal("invalid arguments must not decode as an object")
	}
	if calls[1].ArgumentsError != "" || string(calls[1].Arguments) != "{}" {
		t.Fatalf("empty arguments should be {}: %+v", calls[1])
	}
	if r.Message.Content != "Reading the file." {
		t.Fatalf("content %q", r.Message.Content)
	}
}

func TestFailuresAreTyped(t *testing.T) {
	llmtest.WantFailures(t, Name, []llmtest.Failure{
		{Pair: "not_json.json", Kind: llm.KindMalformed, Status: 200, Msg: "It works!"},
		{Pair: "no_choices.json", Kind: llm.KindMalformed, Status: 200, Msg: "no choices"},
		{Pair: "empty_content.json", Kind: llm.KindMalformed, Status: 200, Msg: "empty answer"},
		{Pair: "unauthorized.json", Kind: llm.KindAuth, Status: 401, Msg: "Incorrect API key provided"},
		{Pair: "rate_limited.json", Kind: llm.KindRateLimited, Status: 429, Msg: "Rate limit reached"},
		{Pair: "server_error.json", Kind: llm.KindServer, Status: 500, Msg: "server had an error"},
		{Pair: "stream_truncated.json", Kind: llm.KindNetwork, Status: 200, Msg: "stream ended before [DONE]"},
		{Pair: "stream_cut.json", Kind: llm.KindNetwork, Status: 200, Msg: "stream ended before [DONE]"},
	}, func(t *testing.T, pair string, stream bool) error {
		p, _ := serve(t, Options{Stream: stream}, pair)
		_, err := p.Complete(context.Background(), turn1())
		return err
	}, func(t *testing.T, e *llm.Error) {
		if e.Model != "gpt-4o-mini" {
			t.Fatalf("err = %#v, want model gpt-4o-mini", e)
		}
	})
}

func TestRetryAfterParsed(t *testing.T) {
	p, _ := serve(t, Options{}, "rate_limited.json")
	_, err := p.Complete(context.Background(), turn1())
	var e *llm.Error
	if !errors.As(err, &e) || e.RetryAfter != 7*time.Second || !e.Retryable() {
		t.Fatalf("err = %#v", err)
	}
}

func TestStreamToolCalls(t *testing.T) {
	p, _ := serve(t, Options{Stream: true}, "stream_tool_call.json")
	r, err := p.Complete(context.Background(), turn1())
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "call_s1", Name: "pi-1__sysinfo", Arguments: json.RawMessage(`{"verbose":false}`)},
		{ID: "call_s2", Name: "pi-1__read_file", Arguments: json.RawMessage(`{"path":"/proc/loadavg"}`)},
	}
	if len(r.Message.ToolCalls) != 2 || !sameCall(r.Message.ToolCalls[0], want[0]) || !sameCall(r.Message.ToolCalls[1], want[1]) {
		t.Fatalf("calls = %+v", r.Message.ToolCalls)
	}
	if r.Message.Content != "Let me check." || r.FinishReason != llm.FinishToolCalls || r.Usage != (llm.Usage{InputTokens: 82, OutputTokens: 31}) {
		t.Fatalf("response = %+v", r)
	}
}

func TestStreamWithoutDone(t *testing.T) {
	p, _ := serve(t, Options{Stream: true}, "stream_text_no_done.json")
	r, err := p.Complete(context.Background(), turn1())
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "45.6 °C" || r.FinishReason != llm.FinishStop || r.Model != "phi3" || r.Usage.OutputTokens != 3 {
		t.Fatalf("response = %+v", r)
	}
}

func TestStreamFallsBackToJSON(t *testing.T) {
	// A server that ignores stream=true and answers in one JSON body.
	p, _ := serve(t, Options{Stream: true}, "stream_ignored.json")
	r, err := p.Complete(context.Background(), turn2())
	if err != nil || r.Message.Content != "The CPU is at 45.6 °C." {
		t.Fatalf("r = %+v err = %v", r, err)
	}
}

func TestTransportContract(t *testing.T) {
	llmtest.Contract(t, Name, func(url string, stream bool, idle time.Duration) llm.Provider {
		return New(Options{BaseURL: url + "/v1", Stream: stream, IdleTimeout: idle})
	}, turn1())
}

func sameCall(a, b llm.ToolCall) bool {
	return a.ID == b.ID && a.Name == b.Name && string(a.Arguments) == string(b.Arguments) && a.ArgumentsError == b.ArgumentsError
}

// TestEndlessStreamIsBounded: a model that streams without end (text, new
// calls, one call's arguments, or chunks that add nothing) costs a bounded
// read and a malformed answer, not all the node's memory (it grew by
// 100 MB/s until the call's timeout before). Small limits keep it quick;
// the defaults are those of httpc.
func TestEndlessStreamIsBounded(t *testing.T) {
	text := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("A", 4000) + `"}}]}` + "\n\n"
	for name, chunk := range map[string]func(i int) string{
		"text": func(int) string { return text },
		"new calls": func(i int) string {
			return fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"name":"x"}}]}}]}`+"\n\n", i)
		},
		"nothing kept": func(int) string {
			return `data: {"id":"` + strings.Repeat("i", 4000) + `","choices":[]}` + "\n\n"
		},
		"arguments": func(int) string {
			return `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"x","arguments":"` +
				strings.Repeat("a", 4000) + `"}}]}}]}` + "\n\n"
		},
	} {
		t.Run(name, func(t *testing.T) {
			const keep, events = 256 << 10, 1 << 20
			s := llmtest.NewEndless("", chunk)
			call := &httpc.Call{Provider: Name, Model: "m", AnswerLimit: keep, StreamLimit: events}
			_, err := readStream(context.Background(), call, s)
			llmtest.WantError(t, err, Name, llm.KindMalformed, 200, "streamed answer")
			if got := s.BytesRead(); got > events+sse.MaxEvent+8<<10 { // the reader's buffer reads ahead
				t.Fatalf("read %d bytes of the stream, want at most about %d", got, events)
			}
		})
	}
}
