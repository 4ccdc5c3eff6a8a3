package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

func turn1() llm.Request {
	return llm.Request{Model: "claude-sonnet-4-5", System: "You run tools on Raspberry Pis.", MaxTokens: 512, Tools: llmtest.Tools(),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Check the CPU temperature"}}}
}

func serve(t *testing.T, o Options, pairs ...string) (*Provider, *llmtest.Server) {
	t.Helper()
	s := llmtest.ServeFiles(t, "anthropic", pairs...)
	o.BaseURL = s.URL
	return New(o), s
}

func TestToolUseRoundTrip(t *testing.T) {
	p, _ := serve(t, Options{APIKey: "sk-ant-test"}, "tool_use.json", "tool_result.json")
	r1, err := p.Complete(context.Background(), turn1())
	if err != nil {
		t.Fatal(err)
	}
	calls := r1.Message.ToolCalls
	if len(calls) != 1 || calls[0].ID != "toolu_01A09q90qw90lq917835lq9" || calls[0].Name != "pi-1__sysinfo" || string(calls[0].Arguments) != `{"verbose":true}` {
		t.Fatalf("calls = %+v", calls)
	}
	if r1.Message.Content != "I'll check the temperature." || r1.FinishReason != llm.FinishToolCalls ||
		r1.Usage != (llm.Usage{InputTokens: 410, OutputTokens: 58}) || r1.Model != "claude-sonnet-4-5-20250929" || r1.Provider != "anthropic" {
		t.Fatalf("response = %+v", r1)
	}
	req := turn1()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: "I'll check the temperature.", ToolCalls: []llm.ToolCall{
			{ID: "toolu_01", Name: "pi-1__sysinfo", Arguments: json.RawMessage(`{"verbose":true}`)},
			{ID: "toolu_02", Name: "pi-1__read_file", Arguments: json.RawMessage(`"{\"path\": \"/etc/host"`), ArgumentsError: "arguments are not valid JSON"},
		}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_01", Name: "pi-1__sysinfo", Content: "temp=45.6'C load=0.12"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_02", Name: "pi-1__read_file", Content: "error (invalid_params): arguments are not a JSON object", IsError: true},
		llm.Message{Role: llm.RoleUser, Content: "And is that hot?"},
	)
	r2, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Message.Content != "45.6 °C is normal for a Pi." || r2.FinishReason != llm.FinishStop || r2.Usage != (llm.Usage{InputTokens: 720, OutputTokens: 14}) {
		t.Fatalf("turn 2 = %+v", r2)
	}
}

func TestSystemMessagesJoinSystemPrompt(t *testing.T) {
	req := llm.Request{System: "a", Messages: []llm.Message{{Role: llm.RoleSystem, Content: "b"}, {Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleUser, Content: "there"}}}
	got := encodeRequest("m", req, false)
	if got.System != "a\n\nb" || len(got.Messages) != 1 || len(got.Messages[0].Content) != 2 {
		t.Fatalf("encoded = %+v", got)
	}
}

func TestFailuresAreTyped(t *testing.T) {
	llmtest.WantFailures(t, Name, []llmtest.Failure{
		{Pair: "overloaded.json", Kind: llm.KindRateLimited, Status: 529, Msg: "overloaded_error: Overloaded"},
		{Pair: "unauthorized.json", Kind: llm.KindAuth, Status: 401, Msg: "authentication_error: invalid x-api-key"},
		{Pair: "bad_request.json", Kind: llm.KindBadRequest, Status: 400, Msg: "prompt is too long"},
		{Pair: "not_json.json", Kind: llm.KindMalformed, Status: 200, Msg: "upstream connect error"},
		{Pair: "empty_content.json", Kind: llm.KindMalformed, Status: 200, Msg: "empty answer"},
		{Pair: "stream_truncated.json", Kind: llm.KindNetwork, Status: 200, Msg: "before message_stop"},
		{Pair: "stream_error.json", Kind: llm.KindServer, Status: 200, Msg: "overloaded_error: Overloaded"},
	}, func(t *testing.T, pair string, stream bool) error {
		p, _ := serve(t, Options{Stream: stream}, pair)
		_, err := p.Complete(context.Background(), turn1())
		return err
	}, nil)
}

func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	p, _ := serve(t, Options{Now: func() time.Time { return now }}, "overloaded.json")
	_, err := p.Complete(context.Background(), turn1())
	var e *llm.Error
	if !errors.As(err, &e) || e.RetryAfter != 5*time.Second || !e.Retryable() {
		t.Fatalf("err = %#v", err)
	}
}

func TestStreamToolUse(t *testing.T) {
	p, _ := serve(t, Options{Stream: true}, "stream_tool_use.json")
	r, err := p.Complete(context.Background(), turn1())
	if err != nil {
		t.Fatal(err)
	}
	calls := r.Message.ToolCalls
	if len(calls) != 1 || calls[0].ID != "toolu_s1" || string(calls[0].Arguments) != `{"verbose":false}` || calls[0].ArgumentsError != "" {
		t.Fatalf("calls = %+v", calls)
	}
	if r.Message.Content != "Checking now." || r.FinishReason != llm.FinishToolCalls || r.Usage != (llm.Usage{InputTokens: 410, OutputTokens: 61}) {
		t.Fatalf("response = %+v", r)
	}
}

func TestTransportContract(t *testing.T) {
	llmtest.Contract(t, Name, func(url string, stream bool, idle time.Duration) llm.Provider {
		return New(Options{BaseURL: url, Stream: stream, IdleTimeout: idle})
	}, turn1())
}
