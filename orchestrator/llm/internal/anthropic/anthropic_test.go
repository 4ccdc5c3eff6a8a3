package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/sse"
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
	req.Sampling = llm.Sampling{Temperature: ptr(1.5), TopP: ptr(0.9), FrequencyPenalty: ptr(0.5), PresencePenalty: ptr(-0.5), Seed: ptr(int64(7))}
	r2, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Message.Content != "45.6 °C is normal for a Pi." || r2.FinishReason != llm.FinishStop || r2.Usage != (llm.Usage{InputTokens: 720, OutputTokens: 14}) {
		t.Fatalf("turn 2 = %+v", r2)
	}
}

func ptr[T any](v T) *T { return &v }

// TestSamplingEncoded: the Messages API takes temperature (0 to 1) and
// top_p, not both on recent models, and no seed or penalties.
func TestSamplingEncoded(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   llm.Sampling
		want string // the request's sampling fields, as JSON
	}{
		{"none", llm.Sampling{}, `{}`},
		{"temperature 0 is sent", llm.Sampling{Temperature: ptr(0.0)}, `{"temperature":0}`},
		{"above 1 is 1", llm.Sampling{Temperature: ptr(2.0)}, `{"temperature":1}`},
		{"top_p alone", llm.Sampling{TopP: ptr(0.5)}, `{"top_p":0.5}`},
		{"temperature over top_p", llm.Sampling{Temperature: ptr(0.3), TopP: ptr(0.5)}, `{"temperature":0.3}`},
		{"no seed, no penalties", llm.Sampling{Seed: ptr(int64(7)), FrequencyPenalty: ptr(1.0), PresencePenalty: ptr(-1.0)}, `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(encodeRequest("m", llm.Request{Sampling: tt.in, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, false))
			if err != nil {
				t.Fatal(err)
			}
			var all map[string]json.RawMessage
			if err := json.Unmarshal(b, &all); err != nil {
				t.Fatal(err)
			}
			got := map[string]json.RawMessage{}
			for _, k := range []string{"temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty"} {
				if v, ok := all[k]; ok {
					got[k] = v
				}
			}
			if g, _ := json.Marshal(got); string(g) != tt.want {
				t.Fatalf("sampling sent %s, want %s (request %s)", g, tt.want, b)
			}
		})
	}
}

func TestSystemMessagesJoinSystemPrompt(t *testing.T) {
	req := llm.Request{System: "a", Messages: []llm.Message{{Role: llm.RoleSystem, Content: "b"}, {Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleUser, Content: "there"}}}
	got := encodeRequest("m", req, false)
	if got.System != "a\n\nb" || len(got.Messages) != 1 || len(got.Messages[0].Content) != 2 {
		t.Fatalf("encoded = %+v", got)
	}
}

// TestFirstMessageIsTheUsers: the API refuses a first message that is not
// the user's; a history that starts with the assistant's greeting (as a
// client may replay) gets a user message before it, and the rest is kept
// as it was.
func TestFirstMessageIsTheUsers(t *testing.T) {
	for _, tt := range []struct {
		name  string
		msgs  []llm.Message
		roles string
	}{
		{"greeting first", []llm.Message{{Role: llm.RoleAssistant, Content: "Ahoy, how may I help?"}, {Role: llm.RoleUser, Content: "hi"}}, "user assistant user"},
		{"system, then the greeting", []llm.Message{{Role: llm.RoleSystem, Content: "be a pirate"}, {Role: llm.RoleAssistant, Content: "Ahoy"}, {Role: llm.RoleUser, Content: "hi"}}, "user assistant user"},
		{"user first", []llm.Message{{Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleAssistant, Content: "hello"}, {Role: llm.RoleUser, Content: "bye"}}, "user assistant user"},
		{"an empty message before the user's", []llm.Message{{Role: llm.RoleAssistant}, {Role: llm.RoleUser, Content: "hi"}}, "user"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := encodeRequest("m", llm.Request{Messages: tt.msgs}, false)
			var roles []string
			for _, m := range got.Messages {
				roles = append(roles, m.Role)
			}
			if strings.Join(roles, " ") != tt.roles {
				t.Fatalf("roles %v, want %s", roles, tt.roles)
			}
			if tt.msgs[0].Role != llm.RoleUser && tt.roles != "user" && got.Messages[0].Content[0].Text != ConversationStart {
				t.Fatalf("first message %+v", got.Messages[0])
			}
		})
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
		{Pair: "stream_error.json", Kind: llm.KindRateLimited, Status: 200, Msg: "overloaded_error: Overloaded"},
	}, func(t *testing.T, pair string, stream bool) error {
		p, _ := serve(t, Options{Stream: stream}, pair)
		_, err := p.Complete(context.Background(), turn1())
		return err
	}, nil)
}

// TestStreamErrorKinds: an error event in a stream is typed as the same
// error would be before the stream, so an overload backs off and a bad
// request is not asked again.
func TestStreamErrorKinds(t *testing.T) {
	for _, tt := range []struct {
		body string
		want llm.ErrorKind
	}{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.KindRateLimited},
		{`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, llm.KindRateLimited},
		{`{"type":"error","error":{"type":"api_error","message":"internal"}}`, llm.KindServer},
		{`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`, llm.KindBadRequest},
		{`{"type":"error","error":{"type":"authentication_error","message":"key"}}`, llm.KindAuth},
		{`{"type":"error","error":{"type":"some_new_error","message":"?"}}`, llm.KindServer},
		{`{"type":"error","error":"flat"}`, llm.KindServer},
		{`not json`, llm.KindServer},
	} {
		if got := streamErrorKind([]byte(tt.body)); got != tt.want {
			t.Errorf("%s: kind %s, want %s", tt.body, got, tt.want)
		}
	}
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

// streamHead starts a Messages stream with one text block.
const streamHead = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"

func textDelta(text string) string {
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text + "\"}}\n\n"
}

// TestEndlessStreamIsBounded: a model that streams without end (text, new
// blocks, tool input) costs a bounded read and a malformed answer, not all
// the node's memory. Small limits keep it quick; the defaults are those of
// httpc.
func TestEndlessStreamIsBounded(t *testing.T) {
	text := textDelta(strings.Repeat("A", 4000))
	input := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" +
		strings.Repeat("a", 4000) + "\"}}\n\n"
	toolStart := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\",\"input\":{}}}\n\n"
	for name, c := range map[string]struct {
		head  string
		chunk func(i int) string
	}{
		"text":  {streamHead, func(int) string { return text }},
		"input": {streamHead + toolStart, func(int) string { return input }},
		"new blocks": {streamHead, func(i int) string {
			return fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", i+1)
		}},
		"nothing kept": {streamHead, func(int) string {
			return "event: ping\ndata: {\"type\":\"ping\",\"pad\":\"" + strings.Repeat("p", 4000) + "\"}\n\n"
		}},
	} {
		t.Run(name, func(t *testing.T) {
			const keep, events = 256 << 10, 1 << 20
			s := llmtest.NewEndless(c.head, c.chunk)
			call := &httpc.Call{Provider: Name, Model: "m", AnswerLimit: keep, StreamLimit: events}
			_, err := readStream(context.Background(), call, s)
			llmtest.WantError(t, err, Name, llm.KindMalformed, 200, "streamed answer")
			if got := s.BytesRead(); got > events+sse.MaxEvent+8<<10 { // the reader's buffer reads ahead
				t.Fatalf("read %d bytes of the stream, want at most about %d", got, events)
			}
		})
	}
}

// TestManyTextDeltasCostLinear: text deltas are joined once, not by copying
// the text so far at each delta (which made 20 000 one-byte deltas allocate
// 211 MB, 50 000 of them 1.3 GB: quadratic in the stream; now 13 MB).
func TestManyTextDeltasCostLinear(t *testing.T) {
	const n = 20_000
	var b strings.Builder
	b.WriteString(streamHead)
	for range n {
		b.WriteString(textDelta("x"))
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	call := &httpc.Call{Provider: Name, Model: "m"}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := readStream(context.Background(), call, strings.NewReader(b.String()))
	runtime.ReadMemStats(&after)
	if err != nil || len(r.Message.Content) != n {
		t.Fatalf("content %d bytes, err %v; want %d bytes", len(r.Message.Content), err, n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("reading %d deltas allocated %d MB, want it linear in the stream (%d KB)", n, alloc>>20, b.Len()>>10)
	}
}

// TestDuplicateToolUseIDs: tool_use blocks that repeat an id get stable
// unique ids, whole and streamed, as the OpenAI provider's calls do (three
// blocks with id "t" were audited as three calls "t", and went back to the
// API in the history as such).
func TestDuplicateToolUseIDs(t *testing.T) {
	block := `{"type":"tool_use","id":"t","name":"pi-1__sysinfo","input":{}}`
	whole := `{"id":"msg_1","type":"message","model":"m","stop_reason":"tool_use","content":[` + block + "," + block + "," + block + `]}`
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\"}}\n\n"
	for i := 0; i < 3; i++ {
		start += fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":%s}\n\n", i, block)
	}
	streamed := start + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, c := range []struct {
		name string
		read func() (llm.Response, error)
	}{
		{"whole", func() (llm.Response, error) { return parseResponse(&httpc.Call{Provider: Name}, []byte(whole)) }},
		{"streamed", func() (llm.Response, error) {
			return readStream(context.Background(), &httpc.Call{Provider: Name}, strings.NewReader(streamed))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.read()
			if err != nil || len(r.Message.ToolCalls) != 3 {
				t.Fatalf("r = %+v err = %v", r, err)
			}
			seen := map[string]bool{}
			for _, tc := range r.Message.ToolCalls {
				if seen[tc.ID] {
					t.Fatalf("id %q repeated: %+v", tc.ID, r.Message.ToolCalls)
				}
				seen[tc.ID] = true
			}
			if r.Message.ToolCalls[0].ID != "t" {
				t.Fatalf("first id = %q, want the server's", r.Message.ToolCalls[0].ID)
			}
		})
	}
}
