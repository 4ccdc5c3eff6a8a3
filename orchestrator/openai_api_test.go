package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

const helloTranscript = `{"name":"hello","turns":[{"content":"hello {{user}}"},{"content":"second"},{"content":"third"}]}`

// statusNodes starts, once per test, a node for each way a chat can end.
type statusNodes struct {
	t     *testing.T
	mu    sync.Mutex
	nodes map[string][2]string // kind → base URL, token
}

func (s *statusNodes) get(kind string) (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.nodes[kind]; ok {
		return v[0], v[1]
	}
	var mod func(*Config)
	o := Options{}
	switch kind {
	case "ok":
		o.Provider = mustScript(s.t, helloTranscript)
	case "overloaded": // this node's own queue for the model is full
		o.Provider = failing(&llm.Error{Kind: llm.KindOverloaded, Provider: "test", Message: "32 calls already wait"})
	case "upstream":
		o.Provider = failing(&llm.Error{Kind: llm.KindServer, Provider: "test", Status: 500, Message: "model crashed"})
	case "acted": // a tool call runs, then the model fails
		o.Provider = funcProvider(func(_ context.Context, req llm.Request) (llm.Response, error) {
			if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
				return llm.Response{}, &llm.Error{Kind: llm.KindServer, Provider: "test", Status: 500, Message: "model crashed after a tool"}
			}
			return llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
				ToolCalls: []llm.ToolCall{{ID: "c1", Name: "sessions_list", Arguments: json.RawMessage(`{}`)}}}}, nil
		})
	case "stuck":
		o.Provider = stuckProvider{}
		mod = func(c *Config) { c.Loop.ChatTimeout.Duration = 300 * time.Millisecond }
	case "diskfull":
		o.Provider = mustScript(s.t, helloTranscript)
		o.diskFree = func(string) (uint64, error) { return 1 << 20, nil }
	case "nomodel": // no [llm]: the node's own default provider
	default:
		s.t.Fatalf("unknown node kind %q", kind)
	}
	_, base, token := startAPI(s.t, mod, o)
	s.nodes[kind] = [2]string{base, token}
	return base, token
}

// post sends body to path on the node of kind with its token; token, when
// not empty, replaces it, and "-" sends none.
func (s *statusNodes) post(t *testing.T, kind, token, path string, body any) *http.Response {
	t.Helper()
	base, own := s.get(kind)
	switch token {
	case "":
		token = own
	case "-":
		token = ""
	}
	return send(t, "POST", base+path, token, body)
}

func completion(text string) map[string]any {
	return map[string]any{"model": "evoclaw", "messages": []map[string]any{{"role": "user", "content": text}}}
}

func with(body map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// TestChatCompletionsStatuses: every way a request ends, with its status,
// its error type and the field named.
func TestChatCompletionsStatuses(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	big := strings.Repeat("x", maxCompletionBody+1)
	tests := []struct {
		name   string
		node   string
		token  string // "" the node's; "-" none
		body   any
		status int
		typ    string
		param  string
		msg    string
	}{
		{"answer", "ok", "", completion("bob"), 200, "", "", ""},
		{"no token", "ok", "-", completion("x"), 401, ErrTypeAuth, "", "bearer token"},
		{"wrong token", "ok", "wrong-token-wrong-token", completion("x"), 401, ErrTypeAuth, "", "bearer token"},
		{"unknown model", "ok", "", with(completion("x"), "model", "gpt-4o"), 404, ErrTypeNotFound, "model", `serves "evoclaw"`},
		{"configured model is no alias", "ok", "", with(completion("x"), "model", "scripted:hello"), 404, ErrTypeNotFound, "model", "not found"},
		{"no model", "ok", "", with(completion("x"), "model", ""), 400, ErrTypeInvalidRequest, "model", "required"},
		{"malformed JSON", "ok", "", `{"model": "evoclaw", "messages": [`, 400, ErrTypeInvalidRequest, "", "not valid JSON"},
		{"wrong type", "ok", "", `{"model": "evoclaw", "messages": "hi"}`, 400, ErrTypeInvalidRequest, "messages", "messages: got a JSON string, want an array"},
		{"body too large", "ok", "", big, 413, ErrTypeInvalidRequest, "", "larger than"},
		{"no messages", "ok", "", with(completion("x"), "messages", []any{}), 400, ErrTypeInvalidRequest, "messages", "at least one"},
		{"last not user", "ok", "", with(completion("x"), "messages", []map[string]any{{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}}),
			400, ErrTypeInvalidRequest, "messages[1].role", "last message must be the user's"},
		{"empty last", "ok", "", completion("  "), 400, ErrTypeInvalidRequest, "messages[0].content", "empty"},
		{"client tools", "ok", "", with(completion("x"), "tools", []map[string]any{{"type": "function", "function": map[string]any{"name": "f"}}}),
			400, ErrTypeInvalidRequest, "tools", "client tools are not supported"},
		{"empty tools is fine", "ok", "", with(completion("x"), "tools", []any{}, "tool_choice", "none"), 200, "", "", ""},
		{"functions", "ok", "", with(completion("x"), "functions", []map[string]any{{"name": "f"}}), 400, ErrTypeInvalidRequest, "functions", "client functions"},
		{"function_call", "ok", "", with(completion("x"), "function_call", "auto"), 400, ErrTypeInvalidRequest, "function_call", "not supported"},
		{"tool_choice required", "ok", "", with(completion("x"), "tool_choice", "required"), 400, ErrTypeInvalidRequest, "tool_choice", "auto"},
		{"tool message", "ok", "", with(completion("x"), "messages", []map[string]any{{"role": "tool", "content": "r", "tool_call_id": "c"}, {"role": "user", "content": "x"}}),
			400, ErrTypeInvalidRequest, "messages[0].role", "not supported"},
		{"assistant tool calls", "ok", "", with(completion("x"), "messages", []map[string]any{
			{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c", "type": "function"}}}, {"role": "user", "content": "x"}}),
			400, ErrTypeInvalidRequest, "messages[0].tool_calls", "not supported"},
		{"assistant legacy function call", "ok", "", with(completion("x"), "messages", []map[string]any{
			{"role": "assistant", "content": nil, "function_call": map[string]any{"name": "f", "arguments": "{}"}}, {"role": "user", "content": "x"}}),
			400, ErrTypeInvalidRequest, "messages[0].function_call", "not supported"},
		{"image part", "ok", "", with(completion("x"), "messages", []map[string]any{{"role": "user", "content": []map[string]any{
			{"type": "text", "text": "what is this"}, {"type": "image_url", "image_url": map[string]any{"url": "data:"}}}}}),
			400, ErrTypeInvalidRequest, "messages[0].content[1].type", "image parts are not supported"},
		{"text part of a number", "ok", "", with(completion("x"), "messages", []map[string]any{{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "text", "text": 5}}}}),
			400, ErrTypeInvalidRequest, "messages[0].content[1].text", "messages[0].content[1].text: got a JSON number, want a string"},
		{"part a string", "ok", "", with(completion("x"), "messages", []map[string]any{{"role": "user", "content": []any{"a"}}}),
			400, ErrTypeInvalidRequest, "messages[0].content[0]", "messages[0].content[0]: got a JSON string, want an object"},
		{"content a number", "ok", "", with(completion("x"), "messages", []map[string]any{{"role": "user", "content": 5}}),
			400, ErrTypeInvalidRequest, "messages[0].content", "want a string or an array"},
		{"text parts", "ok", "", with(completion("x"), "messages", []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "bob"}}}}), 200, "", "", ""},
		{"n 2", "ok", "", with(completion("x"), "n", 2), 400, ErrTypeInvalidRequest, "n", "only 1"},
		{"json response format", "ok", "", with(completion("x"), "response_format", map[string]any{"type": "json_object"}), 400, ErrTypeInvalidRequest, "response_format", "text"},
		{"text response format", "ok", "", with(completion("x"), "response_format", map[string]any{"type": "text"}), 200, "", "", ""},
		{"logprobs", "ok", "", with(completion("x"), "logprobs", true), 400, ErrTypeInvalidRequest, "logprobs", "not supported"},
		{"audio", "ok", "", with(completion("x"), "modalities", []string{"text", "audio"}), 400, ErrTypeInvalidRequest, "modalities", "text"},
		{"max_tokens 0", "ok", "", with(completion("x"), "max_tokens", 0), 400, ErrTypeInvalidRequest, "max_tokens", "positive"},
		{"stop of 16", "ok", "", with(completion("x"), "stop", strings.Split(strings.Repeat("#", 16), "")), 200, "", "", ""},
		{"stop of 17", "ok", "", with(completion("x"), "stop", strings.Split(strings.Repeat("#", 17), "")), 400, ErrTypeInvalidRequest, "stop", "at most 16"},
		{"stop a number", "ok", "", with(completion("x"), "stop", 5), 400, ErrTypeInvalidRequest, "stop", "want a string or an array"},
		{"stop empty", "ok", "", with(completion("x"), "stop", ""), 400, ErrTypeInvalidRequest, "stop", "empty stop sequence"},
		{"stop empty in array", "ok", "", with(completion("x"), "stop", []string{"a", ""}), 400, ErrTypeInvalidRequest, "stop[1]", "empty stop sequence"},
		{"stop null", "ok", "", with(completion("x"), "stop", nil), 200, "", "", ""},
		{"sampling hints and ignored fields", "ok", "", with(completion("x"), "temperature", 0.2, "top_p", 1, "seed", 7, "user", "u", "presence_penalty", 0, "whatever", true,
			"frequency_penalty", -2, "store", false, "parallel_tool_calls", true, "metadata", map[string]string{"k": "v"}, "logit_bias", map[string]int{}), 200, "", "", ""},
		{"temperature 5", "ok", "", with(completion("x"), "temperature", 5), 400, ErrTypeInvalidRequest, "temperature", "out of range"},
		{"temperature -0.1", "ok", "", with(completion("x"), "temperature", -0.1), 400, ErrTypeInvalidRequest, "temperature", "out of range"},
		{"temperature a string", "ok", "", with(completion("x"), "temperature", "hot"), 400, ErrTypeInvalidRequest, "temperature", "want a number"},
		{"top_p 3", "ok", "", with(completion("x"), "top_p", 3), 400, ErrTypeInvalidRequest, "top_p", "out of range"},
		{"frequency_penalty 2.5", "ok", "", with(completion("x"), "frequency_penalty", 2.5), 400, ErrTypeInvalidRequest, "frequency_penalty", "out of range"},
		{"presence_penalty -3", "ok", "", with(completion("x"), "presence_penalty", -3), 400, ErrTypeInvalidRequest, "presence_penalty", "out of range"},
		{"seed a fraction", "ok", "", with(completion("x"), "seed", 1.5), 400, ErrTypeInvalidRequest, "seed", "want an integer"},
		{"user a number", "ok", "", with(completion("x"), "user", 7), 400, ErrTypeInvalidRequest, "user", "want a string"},
		{"store a string", "ok", "", with(completion("x"), "store", "yes"), 400, ErrTypeInvalidRequest, "store", "true or false"},
		{"logit_bias", "ok", "", with(completion("x"), "logit_bias", map[string]int{"50256": -100}), 400, ErrTypeInvalidRequest, "logit_bias", "not supported"},
		{"web_search_options", "ok", "", with(completion("x"), "web_search_options", map[string]any{}), 400, ErrTypeInvalidRequest, "web_search_options", "not supported"},
		{"bad conversation id", "ok", "", with(completion("x"), "conversation_id", "a/b"), 400, ErrTypeInvalidRequest, "conversation_id", "conversation id"},
		{"queue for the model full", "overloaded", "", completion("x"), 429, ErrTypeBusy, "", "overloaded"},
		{"LLM failure", "upstream", "", completion("x"), 502, ErrTypeUpstream, "", "model crashed"},
		{"audit cannot write", "diskfull", "", completion("x"), 503, ErrTypeNotReady, "", "disk nearly full"},
		{"no language model configured", "nomodel", "", completion("x"), 503, ErrTypeNotReady, "", "no language model is configured on this node"},
		{"timeout", "stuck", "", completion("x"), 504, ErrTypeTimeout, "", "no answer within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := nodes.post(t, tt.node, tt.token, "/v1/chat/completions", tt.body)
			wantStatus(t, resp, tt.status)
			if tt.status == 200 {
				var c ChatCompletion
				decodeBody(t, resp, &c)
				if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content == "" {
					t.Fatalf("answer %+v", c)
				}
				return
			}
			var e errorBody
			decodeBody(t, resp, &e)
			if e.Error.Type != tt.typ || !strings.Contains(e.Error.Message, tt.msg) {
				t.Fatalf("error %+v, want type %s and %q in the message", e.Error, tt.typ, tt.msg)
			}
			if got := ""; e.Error.Param != nil || tt.param != "" {
				if e.Error.Param != nil {
					got = *e.Error.Param
				}
				if got != tt.param {
					t.Fatalf("param %q, want %q", got, tt.param)
				}
			}
		})
	}
}

// TestFailedChatThatActedIsNotRetried: a failed chat that may have run
// tool calls (it ran one, or it timed out running) answers X-Should-Retry:
// false, so that the official clients do not run it, and its calls on the
// fleet, twice more; one refused before it ran, or whose model failed
// before any call, may be retried. On both chat endpoints.
func TestFailedChatThatActedIsNotRetried(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	for _, tt := range []struct {
		node   string
		status int
		retry  string // the X-Should-Retry header
		msg    string
	}{
		{"acted", 502, "false", "model crashed after a tool"},
		{"stuck", 504, "false", "no answer within"},
		{"upstream", 502, "", "model crashed"},
		{"overloaded", 429, "", "32 calls already wait"},
	} {
		for _, ep := range []struct {
			path string
			body any
		}{
			{"/v1/chat/completions", completion("x")},
			{"/v1/chat", ChatRequest{Text: "x"}},
		} {
			t.Run(tt.node+ep.path, func(t *testing.T) {
				resp := nodes.post(t, tt.node, "", ep.path, ep.body)
				var e errorBody
				decodeBody(t, resp, &e)
				if resp.StatusCode != tt.status || resp.Header.Get("X-Should-Retry") != tt.retry || !strings.Contains(e.Error.Message, tt.msg) {
					t.Fatalf("status %d, X-Should-Retry %q, %q: want %d, %q and %q", resp.StatusCode, resp.Header.Get("X-Should-Retry"), e.Error.Message, tt.status, tt.retry, tt.msg)
				}
			})
		}
	}
}

// TestNoModelRefusesEveryChat: a node with no [llm] refuses every chat,
// streamed or not, on both chat endpoints and in a job run, with 503, a
// code a client can test, X-Should-Retry: false, and a message that says
// what is wrong, names the tools and how to configure a model; a stream
// gets it as its status, before any 200. Nothing of a refused chat is
// recorded. It answered each with 200 and a fixed reply, recorded as a
// successful LLM call and a two-message conversation.
func TestNoModelRefusesEveryChat(t *testing.T) {
	node, base, token := startAPI(t, nil, Options{})
	for _, tt := range []struct {
		name, path string
		body       any
		accept     string
	}{
		{"completion", "/v1/chat/completions", completion("hi"), ""},
		{"completion streamed", "/v1/chat/completions", with(completion("hi"), "stream", true), ""},
		{"chat", "/v1/chat", map[string]any{"text": "hi"}, ""},
		{"chat streamed", "/v1/chat", map[string]any{"text": "hi", "stream": true}, ""},
		{"chat streamed by Accept", "/v1/chat", map[string]any{"text": "hi"}, "text/event-stream"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := send(t, "POST", base+tt.path, token, tt.body, "Accept", tt.accept)
			wantStatus(t, resp, http.StatusServiceUnavailable)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("Content-Type %q, X-Should-Retry %q: want a JSON error that clients do not retry", ct, resp.Header.Get("X-Should-Retry"))
			}
			var e ChatFailure // the error body of both endpoints, and more
			decodeBody(t, resp, &e)
			if e.Error.Type != ErrTypeNotReady || e.Error.Code == nil || *e.Error.Code != CodeModelNotConfigured {
				t.Fatalf("error %+v, want type %s code %s", e.Error, ErrTypeNotReady, CodeModelNotConfigured)
			}
			for _, want := range []string{"no language model is configured on this node", "sessions_list", "[llm] in evoclaw.toml", "docs/LLM.md"} {
				if !strings.Contains(e.Error.Message, want) {
					t.Errorf("message %q lacks %q", e.Error.Message, want)
				}
			}
		})
	}
	// A job run fails, saying why.
	wantStatus(t, send(t, "POST", base+"/v1/jobs", token, map[string]any{"id": "daily", "schedule": "@daily", "prompt": "p"}), http.StatusCreated)
	wantStatus(t, send(t, "POST", base+"/v1/jobs/daily/run", token, nil), http.StatusAccepted)
	var run RunView
	testenv.Eventually(t, 10*time.Second, func() bool {
		var page RunsPage
		decodeBody(t, send(t, "GET", base+"/v1/runs?job=daily", token, nil), &page)
		if len(page.Runs) > 0 {
			run = page.Runs[0]
		}
		return run.Outcome != ""
	}, "the job run ends")
	if run.Outcome != persistence.OutcomeFailed || !strings.Contains(run.Error, "no language model is configured") {
		t.Errorf("job run %+v, want failed for want of a model", run)
	}
	// Refused before it started: no LLM call, no conversation recorded.
	res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(),
		`SELECT (SELECT count(*) FROM llm_calls), (SELECT count(*) FROM conversations), (SELECT count(*) FROM messages)`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Rows[0]) != "[0 0 0]" {
		t.Errorf("llm calls, conversations, messages recorded: %v, want none", res.Rows[0])
	}
	code, r := readyz(t, base)
	if c := check(r, CheckLLM); code != http.StatusServiceUnavailable || c.OK || !strings.Contains(c.Reason, "no language model is configured") {
		t.Errorf("readyz %d %+v, want 503 with the llm check saying no model is configured", code, r)
	}
}

// TestRefusedChatNamesNoConversation: a chat refused before it started
// (no model, the audit trail cannot write) under an id the node chose
// names no conversation, in the header or the body: none was made, and
// GET .../messages would answer 404 for it. An id the client gave is named
// all the same, and a chat that started and failed names its conversation,
// which holds the request. Before, every refusal named a made-up id.
func TestRefusedChatNamesNoConversation(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	for _, node := range []struct {
		kind    string
		status  int
		started bool
	}{{"nomodel", 503, false}, {"diskfull", 503, false}, {"upstream", 502, true}} {
		for _, tt := range []struct {
			name, path string
			body       map[string]any
			stream     bool
		}{
			{"completion", "/v1/chat/completions", completion("hi"), false},
			{"completion streamed", "/v1/chat/completions", with(completion("hi"), "stream", true), true},
			{"chat", "/v1/chat", map[string]any{"text": "hi"}, false},
			{"chat streamed", "/v1/chat", map[string]any{"text": "hi", "stream": true}, true},
		} {
			if node.started && tt.stream {
				continue // a started chat may answer with a stream
			}
			for _, named := range []string{"", "mine-" + node.kind} {
				t.Run(node.kind+"/"+tt.name+"/"+named, func(t *testing.T) {
					body := tt.body
					if named != "" {
						body = with(body, "conversation_id", named)
					}
					resp := nodes.post(t, node.kind, "", tt.path, body)
					wantStatus(t, resp, node.status)
					var f ChatFailure
					decodeBody(t, resp, &f)
					h := resp.Header.Get(ConversationHeader)
					switch {
					case named != "" && h != named:
						t.Fatalf("%s %q, want the client's %q", ConversationHeader, h, named)
					case named == "" && node.started && h == "":
						t.Fatalf("a chat that started names no conversation")
					case named == "" && !node.started && h != "":
						t.Fatalf("a chat refused before it started names conversation %q", h)
					case tt.path == "/v1/chat" && f.ConversationID != h:
						t.Fatalf("body conversation_id %q, header %q", f.ConversationID, h)
					}
					if h == "" || named != "" {
						return
					}
					base, token := nodes.get(node.kind)
					var m map[string]any
					decodeBody(t, send(t, "GET", base+"/v1/conversations/"+h+"/messages", token, nil), &m)
					if msgs, _ := m["messages"].([]any); len(msgs) == 0 {
						t.Fatalf("conversation %s named by a chat that started: %v", h, m)
					}
				})
			}
		}
	}
}

func TestModels(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	var list ModelList
	decodeBody(t, send(t, "GET", base+"/v1/models", token, nil), &list)
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != ModelEvoclaw || list.Data[0].Object != "model" || list.Data[0].Created == 0 {
		t.Fatalf("models %+v", list)
	}
	var m Model
	decodeBody(t, send(t, "GET", base+"/v1/models/evoclaw", token, nil), &m)
	if m.ID != ModelEvoclaw {
		t.Fatalf("model %+v", m)
	}
	for _, tt := range []struct {
		method, path string
		body         any
		code         string // the error's code, "" for null
	}{
		{"GET", "/v1/models/gpt-4o", nil, "model_not_found"},
		{"GET", "/v1/models/openai/gpt-4o", nil, "model_not_found"},
		{"GET", "/v1/models/openai%2Fgpt-4o", nil, "model_not_found"},
		{"GET", "/v1/models/evoclaw/", nil, "model_not_found"},
		{"POST", "/v1/chat/completions", with(completion("x"), "model", "gpt-4o"), "model_not_found"},
		{"GET", "/v1/nothing", nil, ""},
	} {
		resp := send(t, tt.method, base+tt.path, token, tt.body)
		var e errorBody
		decodeBody(t, resp, &e)
		code := ""
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		if resp.StatusCode != 404 || e.Error.Type != ErrTypeNotFound || code != tt.code {
			t.Fatalf("%s %s: %d %+v (code %q), want 404 code %q", tt.method, tt.path, resp.StatusCode, e, code, tt.code)
		}
	}
	resp := send(t, "GET", base+"/v1/models", "", nil)
	var e errorBody
	decodeBody(t, resp, &e)
	if resp.StatusCode != 401 || e.Error.Type != ErrTypeAuth || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d %+v", resp.StatusCode, e)
	}
}

// recorder is a provider that answers from a transcript and keeps every
// request it saw.
type recorder struct {
	mu   sync.Mutex
	reqs []llm.Request
	next llm.Provider
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.next.Complete(ctx, req)
}

func (r *recorder) last() llm.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

func roles(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "%s:%s|", m.Role, m.Content)
	}
	return b.String()
}

// TestReplayedAnswers: a client replays the answers it got as history,
// in the shapes OpenAI's API gives them; the model sees their text. A
// refusal is one: as the answer's refusal field with no content, or as a
// "refusal" part of the content, which only an assistant message may hold.
func TestReplayedAnswers(t *testing.T) {
	rec := &recorder{next: mustScript(t, helloTranscript)}
	_, base, token := startAPI(t, nil, Options{Provider: rec})
	refusal := "I can't help with that."
	for _, tt := range []struct {
		name  string
		reply map[string]any // messages[1], between two user messages
		saw   string         // roles() of what the model saw; "" when refused
		param string
	}{
		{"text", map[string]any{"role": "assistant", "content": "b"}, "user:a|assistant:b|user:c|", ""},
		{"refusal field", map[string]any{"role": "assistant", "content": nil, "refusal": refusal},
			"user:a|assistant:" + refusal + "|user:c|", ""},
		{"refusal part", map[string]any{"role": "assistant", "content": []map[string]any{{"type": "refusal", "refusal": refusal}}},
			"user:a|assistant:" + refusal + "|user:c|", ""},
		{"text and refusal parts", map[string]any{"role": "assistant", "content": []map[string]any{
			{"type": "text", "text": "b"}, {"type": "refusal", "refusal": refusal}}}, "user:a|assistant:b\n" + refusal + "|user:c|", ""},
		{"refusal part without its text", map[string]any{"role": "assistant", "content": []map[string]any{{"type": "refusal"}}},
			"", "messages[1].content[0].refusal"},
		{"refusal part of a user", map[string]any{"role": "user", "content": []map[string]any{{"type": "refusal", "refusal": refusal}}},
			"", "messages[1].content[0].type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := send(t, "POST", base+"/v1/chat/completions", token, map[string]any{"model": "evoclaw", "messages": []map[string]any{
				{"role": "user", "content": "a"}, tt.reply, {"role": "user", "content": "c"}}})
			if tt.saw == "" {
				var e errorBody
				decodeBody(t, resp, &e)
				if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != tt.param {
					t.Fatalf("%d %+v, want 400 naming %s", resp.StatusCode, e.Error, tt.param)
				}
				return
			}
			var c ChatCompletion
			decodeBody(t, resp, &c)
			if resp.StatusCode != 200 || roles(rec.last().Messages) != tt.saw {
				t.Fatalf("%d %+v: the model saw %q, want %q", resp.StatusCode, c, roles(rec.last().Messages), tt.saw)
			}
		})
	}
}

// TestChatCompletionsContinuity: a stateless request seeds a fresh
// conversation from its earlier messages; a named conversation continues
// from its stored history and ignores the request's earlier messages; both
// are audited under the id the response names.
func TestChatCompletionsContinuity(t *testing.T) {
	rec := &recorder{next: mustScript(t, helloTranscript)}
	node, base, token := startAPI(t, nil, Options{Provider: rec})

	stateless := map[string]any{"model": "evoclaw", "messages": []map[string]any{
		{"role": "system", "content": "be brief"}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
		{"role": "developer", "content": "no jokes"}, {"role": "user", "content": "c"}}}
	var ids []string
	for range 2 {
		resp := send(t, "POST", base+"/v1/chat/completions", token, stateless)
		var c ChatCompletion
		decodeBody(t, resp, &c)
		if resp.StatusCode != 200 || c.Choices[0].Message.Content != "second" || c.Choices[0].FinishReason != "stop" {
			t.Fatalf("stateless answer %d %+v", resp.StatusCode, c)
		}
		if !strings.HasPrefix(c.ConversationID, "oai-") || resp.Header.Get(ConversationHeader) != c.ConversationID {
			t.Fatalf("conversation %q, header %q", c.ConversationID, resp.Header.Get(ConversationHeader))
		}
		if c.Usage.PromptTokens == 0 || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens || c.Model != "evoclaw" || c.Created == 0 {
			t.Fatalf("completion fields %+v", c)
		}
		req := rec.last()
		if req.System != "be brief\n\nno jokes" || roles(req.Messages) != "user:a|assistant:b|user:c|" {
			t.Fatalf("the model saw system %q, messages %s", req.System, roles(req.Messages))
		}
		ids = append(ids, c.ConversationID)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two stateless requests share conversation %s", ids[0])
	}

	// Named, by header, then by body field: the stored history counts.
	named := map[string]any{"model": "evoclaw", "messages": []map[string]any{
		{"role": "user", "content": "ignored"}, {"role": "assistant", "content": "ignored too"}, {"role": "user", "content": "first"}}}
	resp := send(t, "POST", base+"/v1/chat/completions", token, named, ConversationHeader, "kitchen")
	var c ChatCompletion
	decodeBody(t, resp, &c)
	if c.ConversationID != "kitchen" || c.Choices[0].Message.Content != "hello first" || roles(rec.last().Messages) != "user:first|" {
		t.Fatalf("named start: %+v, the model saw %s", c, roles(rec.last().Messages))
	}
	resp = send(t, "POST", base+"/v1/chat/completions", token, with(completion("again"), "conversation_id", "kitchen"))
	decodeBody(t, resp, &c)
	if c.ConversationID != "kitchen" || c.Choices[0].Message.Content != "second" ||
		roles(rec.last().Messages) != "user:first|assistant:hello first|user:again|" {
		t.Fatalf("named continued: %+v, the model saw %s", c, roles(rec.last().Messages))
	}
	resp = send(t, "POST", base+"/v1/chat/completions", token, with(completion("x"), "conversation_id", "kitchen"), ConversationHeader, "garden")
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("header and body naming different conversations: %d", resp.StatusCode)
	}

	res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(),
		`SELECT conversation_id, count(*) FROM messages GROUP BY conversation_id ORDER BY conversation_id`)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("[[kitchen 4] [%s 4] [%s 4]]", min(ids[0], ids[1]), max(ids[0], ids[1]))
	if got := fmt.Sprint(res.Rows); got != want {
		t.Fatalf("audited messages per conversation %s, want %s", got, want)
	}
}

// readTranscript calls the node's own read tool once, then answers.
const readTranscript = `{"name":"read","turns":[
  {"content":"","tool_calls":[{"id":"r1","name":"read","arguments":{"path":"notes.txt"}}]},
  {"content":"the note says {{result r1}}"}]}`

// workspace configures the read-only built-ins over a workspace holding
// notes.txt.
func workspace(t testing.TB) func(*Config) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("pump at night"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		c.Builtin.Groups, c.Builtin.Workspace = []string{"read-only"}, ws
		c.Skills.Permissions = []string{"file_read"}
	}
}

func chunks(t *testing.T, events []sseEvent) ([]CompletionChunk, []string) {
	t.Helper()
	var out []CompletionChunk
	var raw []string
	for _, e := range events {
		if e.comment {
			continue
		}
		raw = append(raw, e.data)
		if e.data == "[DONE]" || strings.HasPrefix(e.data, `{"error"`) {
			continue
		}
		var c CompletionChunk
		if err := json.Unmarshal([]byte(e.data), &c); err != nil {
			t.Fatalf("chunk %s: %v", e.data, err)
		}
		out = append(out, c)
	}
	return out, raw
}

func TestChatCompletionsStreaming(t *testing.T) {
	_, base, token := startAPI(t, workspace(t), Options{Provider: mustScript(t, readTranscript)})
	resp := send(t, "POST", base+"/v1/chat/completions", token,
		with(completion("what does the note say?"), "stream", true, "stream_options", map[string]any{"include_usage": true}))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasPrefix(resp.Header.Get(ConversationHeader), "oai-") {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	cs, raw := chunks(t, readSSE(t, resp.Body))
	if raw[len(raw)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %v", raw)
	}
	first := cs[0]
	if first.Object != "chat.completion.chunk" || first.Choices[0].Delta.Role != "assistant" || first.Evoclaw != nil ||
		first.ConversationID != resp.Header.Get(ConversationHeader) {
		t.Fatalf("first chunk %+v", first)
	}
	var kinds, text []string
	var finish string
	var usage *CompletionUsage
	for _, c := range cs[1:] {
		if c.ID != first.ID || c.Model != "evoclaw" {
			t.Fatalf("chunk of another completion: %+v", c)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Fatalf("usage chunk with choices: %+v", c)
			}
			usage = c.Usage
			continue
		}
		ch := c.Choices[0]
		switch {
		case c.Evoclaw != nil:
			p := c.Evoclaw.(map[string]any)
			if ch.Delta.Content != nil || ch.Delta.Role != "" || ch.FinishReason != nil {
				t.Fatalf("progress chunk carries a delta: %+v", c)
			}
			kinds = append(kinds, fmt.Sprint(p["kind"], ":", p["tool"]))
		case ch.Delta.Content != nil:
			text = append(text, *ch.Delta.Content)
		case ch.FinishReason != nil:
			finish = *ch.FinishReason
		}
	}
	want := "[llm_start:<nil> llm_end:<nil> tool_start:read tool_end:read llm_start:<nil> llm_end:<nil>]"
	if fmt.Sprint(kinds) != want {
		t.Fatalf("progress %v, want %s", kinds, want)
	}
	if strings.Join(text, "") != "the note says pump at night" || finish != "stop" || usage == nil || usage.TotalTokens == 0 {
		t.Fatalf("text %q, finish %q, usage %+v", text, finish, usage)
	}
}

// TestChatCompletionsLimitIsLength: a loop limit under on_limit = "answer"
// finishes with "length", streamed or not.
func TestChatCompletionsLimitIsLength(t *testing.T) {
	transcript := `{"name":"limit","turns":[
	  {"content":"","tool_calls":[{"id":"r1","name":"read","arguments":{"path":"notes.txt"}}]},
	  {"content":"all I have: {{result r1}}","tool_calls":[{"id":"r2","name":"read","arguments":{"path":"other.txt"}}]}]}`
	mod := workspace(t)
	_, base, token := startAPI(t, func(c *Config) { mod(c); c.Loop.MaxToolIterations = 1 }, Options{Provider: mustScript(t, transcript)})
	var c ChatCompletion
	decodeBody(t, send(t, "POST", base+"/v1/chat/completions", token, completion("go")), &c)
	if len(c.Choices) != 1 || c.Choices[0].FinishReason != "length" || !strings.Contains(c.Choices[0].Message.Content, "all I have") {
		t.Fatalf("limited answer %+v", c)
	}
	resp := send(t, "POST", base+"/v1/chat/completions", token, with(completion("go"), "stream", true))
	defer resp.Body.Close()
	cs, _ := chunks(t, readSSE(t, resp.Body))
	if last := cs[len(cs)-1]; last.Choices[0].FinishReason == nil || *last.Choices[0].FinishReason != "length" {
		t.Fatalf("last chunk %+v", last)
	}
}

// TestChatCompletionsStreamErrors: a chat refused before anything was
// streamed answers with its status, also one whose first LLM call is
// refused (busy: 429 and Retry-After); one that fails after the 200 header
// ends with an error event and no [DONE] (TestStreamFailures).
func TestChatCompletionsStreamErrors(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	base, token := nodes.get("overloaded")
	resp := send(t, "POST", base+"/v1/chat/completions", token, with(completion("x"), "stream", true))
	var e errorBody
	decodeBody(t, resp, &e)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || e.Error.Type != ErrTypeBusy {
		t.Fatalf("busy stream: %d, Retry-After %q, %+v", resp.StatusCode, resp.Header.Get("Retry-After"), e)
	}
	base, token = nodes.get("diskfull")
	resp = send(t, "POST", base+"/v1/chat/completions", token, with(completion("x"), "stream", true))
	decodeBody(t, resp, &e)
	if resp.StatusCode != 503 || e.Error.Type != ErrTypeNotReady {
		t.Fatalf("refused stream: %d %+v", resp.StatusCode, e)
	}
}

// blocking is a provider whose completions wait until canceled, saying so.
type blocking struct {
	started, canceled chan struct{}
	once              sync.Once
}

func (*blocking) Name() string { return "blocking" }
func (b *blocking) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	close(b.started)
	<-ctx.Done()
	b.once.Do(func() { close(b.canceled) })
	return llm.Response{}, &llm.Error{Kind: llm.KindCanceled, Provider: "blocking", Err: ctx.Err()}
}

// TestClientDisconnectCancelsTheChat: a client that goes away mid-stream
// cancels the chat in the loop (the LLM call's context ends) long before
// the chat timeout, on both endpoints.
func TestClientDisconnectCancelsTheChat(t *testing.T) {
	for _, ep := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"evoclaw","stream":true,"messages":[{"role":"user","content":"x"}]}`},
		{"/v1/chat", `{"text":"x","stream":true}`},
	} {
		t.Run(ep.path, func(t *testing.T) {
			b := &blocking{started: make(chan struct{}), canceled: make(chan struct{})}
			node, base, token := startAPI(t, nil, Options{Provider: b})
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", base+ep.path, strings.NewReader(ep.body))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			<-b.started
			cancel() // the client goes away
			resp.Body.Close()
			select {
			case <-b.canceled:
			case <-time.After(10 * time.Second):
				t.Fatal("the LLM call was not canceled after the client left")
			}
			conv := resp.Header.Get(ConversationHeader)
			testenv.Eventually(t, 10*time.Second, func() bool {
				res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(),
					`SELECT count(*) FROM llm_calls WHERE conversation_id = ? AND status != 'success'`, conv)
				return err == nil && fmt.Sprint(res.Rows[0][0]) == "1"
			}, "the canceled LLM call is audited")

		})
	}
}

// TestKeepAlive: a long wait sends SSE comments.
func TestKeepAlive(t *testing.T) {
	slow := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		select {
		case <-time.After(400 * time.Millisecond):
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "late"}}, nil
	})
	_, base, token := startAPI(t, nil, Options{Provider: slow, keepAlive: 50 * time.Millisecond})
	resp := send(t, "POST", base+"/v1/chat/completions", token, with(completion("x"), "stream", true))
	defer resp.Body.Close()
	comments := 0
	for _, e := range readSSE(t, resp.Body) {
		if e.comment {
			comments++
		}
	}
	if comments < 2 {
		t.Fatalf("%d keep-alive comments in a 400 ms wait at 50 ms", comments)
	}
}

// streamedChats are a streamed chat "x" on each chat endpoint.
func streamedChats() []struct {
	path string
	body any
} {
	return []struct {
		path string
		body any
	}{
		{"/v1/chat/completions", with(completion("x"), "stream", true)},
		{"/v1/chat", ChatRequest{Text: "x", Stream: true}},
	}
}

// TestLongAnswerStreamsInShortLines: a streamed answer's text comes in
// content chunks whose SSE lines stay far below the 128 KiB that clients
// reading the stream by line with aiohttp take at most, cut on rune
// boundaries, and the chunks join to the answer.
func TestLongAnswerStreamsInShortLines(t *testing.T) {
	const maxLine = 32 << 10
	for _, tt := range []struct{ name, answer string }{
		{"empty", ""},
		{"short", "hello"},
		{"html, six bytes a character escaped", strings.Repeat("<p>é</p>\n", 12000)},
		{"three-byte runes across every cut", strings.Repeat("€", 5000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			answer := funcProvider(func(context.Context, llm.Request) (llm.Response, error) {
				return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: tt.answer}}, nil
			})
			_, base, token := startAPI(t, nil, Options{Provider: answer})
			resp := send(t, "POST", base+"/v1/chat/completions", token, with(completion("x"), "stream", true))
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			var text strings.Builder
			roles, last, finish, lines := 0, "", "", 0
			for sc.Scan() {
				line := sc.Text()
				if len(line) > maxLine {
					t.Fatalf("an SSE line of %d bytes", len(line))
				}
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				last, lines = data, lines+1
				var c CompletionChunk
				if data == "[DONE]" || json.Unmarshal([]byte(data), &c) != nil || len(c.Choices) == 0 {
					continue
				}
				if finish != "" {
					t.Fatalf("a chunk after finish_reason %q: %s", finish, data)
				}
				if c.Choices[0].Delta.Role != "" {
					roles++
				}
				if c.Choices[0].Delta.Content != nil {
					if !utf8.ValidString(*c.Choices[0].Delta.Content) {
						t.Fatalf("a delta cut inside a rune: %q", *c.Choices[0].Delta.Content)
					}
					text.WriteString(*c.Choices[0].Delta.Content)
				}
				if c.Choices[0].FinishReason != nil {
					finish = *c.Choices[0].FinishReason
				}
			}
			if text.String() != tt.answer || roles != 1 || finish != "stop" || last != "[DONE]" {
				t.Fatalf("%d events: joined %d bytes of %d (equal: %v), %d role chunks, finish %q, last %q",
					lines, text.Len(), len(tt.answer), text.String() == tt.answer, roles, finish, last)
			}
		})
	}
}

// TestKeepAliveCountsFromTheLastWrite: a stream is never silent for much
// longer than keepAlive, also when its last chunk went out just after a
// keep-alive tick (the tool events of a first completion) and the next
// completion is slow: a ticker that only looked for writes since its last
// tick left up to twice keepAlive of silence there. On both endpoints.
func TestKeepAliveCountsFromTheLastWrite(t *testing.T) {
	const keepAlive = 400 * time.Millisecond
	// The first completion asks for a tool 2.25 keepAlive in (just after
	// the second tick), the second answers 3 keepAlive later.
	slow := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		toolDone := req.Messages[len(req.Messages)-1].Role == llm.RoleTool
		wait, resp := 9*keepAlive/4, llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "nosuchtool", Arguments: json.RawMessage(`{}`)}}}}
		if toolDone {
			wait, resp = 3*keepAlive, llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "late"}}
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
		return resp, nil
	})
	_, base, token := startAPI(t, nil, Options{Provider: slow, keepAlive: keepAlive})
	for _, ep := range streamedChats() {
		t.Run(ep.path, func(t *testing.T) {
			resp := send(t, "POST", base+ep.path, token, ep.body)
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			var last time.Time
			var longest time.Duration
			var stream strings.Builder
			for sc.Scan() {
				if sc.Text() == "" {
					continue
				}
				now := time.Now()
				if !last.IsZero() && now.Sub(last) > longest {
					longest = now.Sub(last)
				}
				last = now
				stream.WriteString(sc.Text() + "\n")
			}
			if !strings.Contains(stream.String(), `"late"`) || !strings.Contains(stream.String(), "nosuchtool") {
				t.Fatalf("not the stream of a tool turn and an answer:\n%s", stream.String())
			}
			if longest > 3*keepAlive/2 {
				t.Fatalf("the stream was silent for %v with keep-alive at %v:\n%s", longest, keepAlive, stream.String())
			}
		})
	}
}

func TestStatusErrorsAreTyped(t *testing.T) {
	if code, typ := chatErrorStatus(fmt.Errorf("x: %w", ErrNotReady)); code != 503 || typ != ErrTypeNotReady {
		t.Fatalf("not ready: %d %s", code, typ)
	}
	if code, _ := chatErrorStatus(fmt.Errorf("%w: %w", actors.ErrLLM, errors.New("scripted transcript exhausted"))); code != 502 {
		t.Fatalf("llm: %d", code)
	}
	// The chat's deadline ended the LLM call just before the node's own wait.
	if code, typ := chatErrorStatus(fmt.Errorf("%w: llm stuck: %w", actors.ErrLLM, context.DeadlineExceeded)); code != 504 || typ != ErrTypeTimeout {
		t.Fatalf("llm deadline: %d %s", code, typ)
	}
}
