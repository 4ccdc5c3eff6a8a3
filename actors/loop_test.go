package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
)

// transcript builds a scripted transcript from turns written as JSON.
func transcript(turns ...string) string {
	return `{"name":"t","turns":[` + strings.Join(turns, ",") + `]}`
}

func callTurn(id, name, args string) string {
	return fmt.Sprintf(`{"content":"","tool_calls":[{"id":%q,"name":%q,"arguments":%s}]}`, id, name, args)
}

// countingEcho answers every tool command like echoReply and counts them.
func countingEcho(h *harness, n *atomic.Int32) func(wire.Command, wire.ToolPayload) {
	echo := echoReply(h)
	return func(cmd wire.Command, p wire.ToolPayload) {
		n.Add(1)
		echo(cmd, p)
	}
}

func TestRepeatedIdenticalCallIsRefusedThenEndsTheLoop(t *testing.T) {
	same := `{"text":"a","n":1}`
	reordered := `{"n":1,"text":"a"}` // the same call: key order does not matter
	tr := transcript(
		callTurn("c1", "pi-1__echo", same),
		callTurn("c2", "pi-1__echo", reordered),
		callTurn("c3", "pi-1__echo", same),
		`{"content":"final: {{result c1}} / {{result c2}}"}`)
	for _, onLimit := range []string{OnLimitAnswer, OnLimitError} {
		t.Run(onLimit, func(t *testing.T) {
			h := newHarness(t, tr, func(o *ConvOptions) { o.OnLimit = onLimit })
			var runs atomic.Int32
			h.edge.onTool = countingEcho(h, &runs)
			ans := h.chat(t, "go")
			if runs.Load() != 1 {
				t.Fatalf("the identical call ran %d times, want once", runs.Load())
			}
			if ans.Iterations != 3 {
				t.Fatalf("iterations %d, want 3 (run, warned, ended)", ans.Iterations)
			}
			if onLimit == OnLimitError {
				if !errors.Is(ans.Err, ErrRepeatedToolCall) {
					t.Fatalf("err %v, want ErrRepeatedToolCall", ans.Err)
				}
				return
			}
			if ans.Err != nil || !strings.Contains(ans.Limit, "repeating") {
				t.Fatalf("answer %+v", ans)
			}
			if !strings.Contains(ans.Text, "final: echo:a / Error (repeated_call)") {
				t.Fatalf("the model was not told of the repeat: %q", ans.Text)
			}
			recs := h.audit.All()
			if len(recs) != 3 || recs[1].ErrorType != string(ErrRepeatedCall) {
				t.Fatalf("audit %+v", recs)
			}
		})
	}
}

func TestToolErrorLimit(t *testing.T) {
	fail := func(h *harness) func(wire.Command, wire.ToolPayload) {
		return func(cmd wire.Command, p wire.ToolPayload) {
			if strings.Contains(string(p.Parameters), "ok") {
				echoReply(h)(cmd, p)
				return
			}
			h.edge.reply(wire.ToolResult{Status: wire.StatusError, Tool: p.Tool, ErrorType: wire.ErrExecutionFailed, Error: "exit 1", RequestID: cmd.RequestID})
		}
	}
	tests := []struct {
		name     string
		args     []string // one call per turn
		wantIter int
		wantHit  bool
	}{
		{"two failing turns hit a limit of 2", []string{`{"text":"f1"}`, `{"text":"f2"}`, `{"text":"f3"}`}, 2, true},
		{"a success resets the count", []string{`{"text":"f1"}`, `{"text":"ok"}`, `{"text":"f2"}`}, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var turns []string
			for i, a := range tt.args {
				turns = append(turns, callTurn(fmt.Sprint("c", i), "pi-1__echo", a))
			}
			turns = append(turns, `{"content":"done"}`)
			h := newHarness(t, transcript(turns...), func(o *ConvOptions) { o.ToolErrorLimit = 2; o.OnLimit = OnLimitError })
			h.edge.onTool = fail(h)
			ans := h.chat(t, "go")
			if ans.Iterations != tt.wantIter {
				t.Fatalf("iterations %d, want %d (%+v)", ans.Iterations, tt.wantIter, ans)
			}
			if got := errors.Is(ans.Err, ErrToolErrorLimit); got != tt.wantHit {
				t.Fatalf("err %v, want limit hit %v", ans.Err, tt.wantHit)
			}
		})
	}
}

func TestCancelEndsTheChatAndTheNextOneWorks(t *testing.T) {
	tr := transcript(callTurn("c1", "pi-1__echo", `{"text":"slow"}`), `{"content":"never"}`, `{"content":"second answer"}`)
	h := newHarness(t, tr, func(o *ConvOptions) {
		o.TimeoutRules = map[string]TimeoutRule{CategoryOther: {Default: time.Minute, Max: time.Minute}}
	})
	sent := make(chan wire.Command, 1)
	h.edge.onTool = func(cmd wire.Command, _ wire.ToolPayload) { sent <- cmd } // never answers
	wait := askLater(h.sys.Root, h.convs.PID, &Chat{ConversationID: "c", Text: "go"}, 20*time.Second)
	cmd := <-sent
	start := time.Now()
	h.sys.Root.Send(h.convs.PID, &Cancel{ConversationID: "c"})
	res, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	if ans := res.(*Answer); !errors.Is(ans.Err, ErrCanceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("answer %+v after %s", ans, time.Since(start))
	}
	// The agent was told to forget the request: a late reply is dropped.
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: "late", RequestID: cmd.RequestID})
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.Contains(h.logs.String(), "unknown or expired request_id")
	}, "late reply dropped")
	// The history holds user, assistant(tool call); the transcript's next
	// turn (index 1, "never") is skipped only if history advanced: the
	// canceled turn's tool call has no result, so turn 1 answers.
	ans := h.chat(t, "again")
	if ans.Err != nil || ans.Text == "" {
		t.Fatalf("chat after cancel: %+v", ans)
	}
}

// TestCancelOfAQueuedChatLeavesTheRunningOne: a Cancel naming a chat that
// waits in the queue drops that chat only; the running one goes on.
func TestCancelOfAQueuedChatLeavesTheRunningOne(t *testing.T) {
	tr := transcript(callTurn("c1", "pi-1__echo", `{"text":"slow"}`), `{"content":"first answer"}`, `{"content":"never"}`)
	h := newHarness(t, tr, func(o *ConvOptions) {
		o.TimeoutRules = map[string]TimeoutRule{CategoryOther: {Default: time.Minute, Max: time.Minute}}
	})
	sent := make(chan wire.Command, 1)
	h.edge.onTool = func(cmd wire.Command, _ wire.ToolPayload) { sent <- cmd }
	running := askLater(h.sys.Root, h.convs.PID, &Chat{ConversationID: "c", Text: "go"}, 20*time.Second)
	cmd := <-sent
	queued := &Chat{ConversationID: "c", Text: "later"}
	got := make(chan any, 1)
	go func() {
		res, err := Ask(h.sys.Root, h.convs.PID, queued, 20*time.Second)
		if err != nil {
			res = err
		}
		got <- res
	}()
	// The Ask runs on its own goroutine: cancel until the chat was queued
	// (a Cancel for a chat the conversation does not hold does nothing).
	var res any
	for res == nil {
		h.sys.Root.Send(h.convs.PID, &Cancel{ConversationID: "c", Chat: queued})
		select {
		case res = <-got:
		case <-time.After(10 * time.Millisecond):
		}
	}
	if ans, ok := res.(*Answer); !ok || !errors.Is(ans.Err, ErrCanceled) {
		t.Fatalf("queued chat: %+v, want canceled", res)
	}
	// A Cancel for a chat that ended does nothing either.
	h.sys.Root.Send(h.convs.PID, &Cancel{ConversationID: "c", Chat: queued})
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: "done", RequestID: cmd.RequestID})
	res, err := running()
	if err != nil {
		t.Fatal(err)
	}
	if ans := res.(*Answer); ans.Err != nil || ans.Text != "first answer" {
		t.Fatalf("running chat: %+v", ans)
	}
}

func TestParallelCallsKeepOrderAndCountMetrics(t *testing.T) {
	tr := transcript(`{"content":"","tool_calls":[
		{"id":"a","name":"pi-1__echo","arguments":{"text":"A"}},
		{"id":"b","name":"pi-1__echo","arguments":{"text":"B"}},
		{"id":"c","name":"pi-1__echo","arguments":{"text":"C"}}]}`,
		`{"content":"{{result a}},{{result b}},{{result c}}"}`)
	for _, par := range []int{3, 2} {
		t.Run(fmt.Sprint("max_parallel=", par), func(t *testing.T) {
			m := &Metrics{}
			h := newHarness(t, tr, func(o *ConvOptions) { o.MaxParallel = par; o.Metrics = m })
			// Answer in reverse order of arrival once all allowed calls are
			// in flight, so completion order differs from call order.
			var mu sync.Mutex
			var held []func()
			h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
				mu.Lock()
				held = append(held, func() { echoReply(h)(cmd, p) })
				ready := len(held) == par || (par == 2 && len(held) == 3)
				var run []func()
				if ready {
					for i := len(held) - 1; i >= 0; i-- {
						run = append(run, held[i])
					}
					held = nil
				}
				mu.Unlock()
				time.Sleep(20 * time.Millisecond) // every call takes a while
				for _, f := range run {
					f()
				}
			}
			if par == 2 {
				// With two slots the third call starts only after one ends:
				// answer each at once instead.
				h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
					time.Sleep(20 * time.Millisecond)
					echoReply(h)(cmd, p)
				}
			}
			ans := h.chat(t, "go")
			if ans.Err != nil || ans.Text != "echo:A,echo:B,echo:C" {
				t.Fatalf("answer %+v", ans)
			}
			s := m.Snapshot()
			if s.Calls != 3 || s.Successes != 3 || s.ParallelBatches != 1 || s.MaxConcurrency != par {
				t.Fatalf("metrics %+v, want 3 calls in 1 batch at concurrency %d", s, par)
			}
			if s.WallTimeSavedMs <= 0 {
				t.Fatalf("wall time saved %d ms, want > 0 for calls that overlapped", s.WallTimeSavedMs)
			}
			if st := s.Tools["pi-1__echo"]; st.Calls != 3 || st.MaxMs < 20 {
				t.Fatalf("per-tool stats %+v", st)
			}
		})
	}
}

var schemaTools = []wire.ToolInfo{{Name: "echo", Description: "echoes", TimeoutMS: 1000, Parameters: map[string]any{
	"type":       "object",
	"properties": map[string]any{"text": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}},
	"required":   []any{"text"},
}}}

func TestArgumentsAreValidatedBeforeSending(t *testing.T) {
	tests := []struct {
		args string
		want []string // substrings of the tool message
		runs int32
	}{
		{`{"n":2}`, []string{"Error (invalid_params)", `missing "text"`, "Required: [text]. Optional: [n]."}, 0},
		{`{"text":"x","n":"two"}`, []string{"Error (invalid_params)", "Required: [text]"}, 0},
		{`[1,2]`, []string{"Error (invalid_params)", "not a JSON object"}, 0},
		{`{"text":"x","n":2}`, []string{"echo:x"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			h := newHarnessTools(t, transcript(callTurn("c", "pi-1__echo", tt.args), `{"content":"{{result c}}"}`), schemaTools, nil)
			var runs atomic.Int32
			h.edge.onTool = countingEcho(h, &runs)
			ans := h.chat(t, "go")
			for _, w := range tt.want {
				if !strings.Contains(ans.Text, w) {
					t.Fatalf("answer %q lacks %q", ans.Text, w)
				}
			}
			if runs.Load() != tt.runs {
				t.Fatalf("%d commands sent, want %d", runs.Load(), tt.runs)
			}
		})
	}
}

func TestCategoryTimeouts(t *testing.T) {
	rules := DefaultTimeoutRules
	tests := []struct {
		declared, name string
		ownMS          int64
		want           time.Duration
	}{
		{"", "read", 0, 5 * time.Second},
		{"", "read", 60_000, 30 * time.Second}, // clamped at the file maximum
		{"", "bash", 0, 30 * time.Second},
		{"", "bash", 120_000, 120 * time.Second},
		{"", "bash", 900_000, 300 * time.Second},
		{"", "webfetch", 0, 30 * time.Second},
		{"", "git_status", 0, 60 * time.Second},
		{"", "git_commit", 900_000, 300 * time.Second},
		{"", "glob", 0, 5 * time.Second},
		{"", "apply_patch", 0, 5 * time.Second},
		{"", "websearch", 0, 30 * time.Second},
		{"", "memory_read", 0, 10 * time.Second},
		{"", "todowrite", 0, 10 * time.Second},
		{"system", "sysinfo", 0, 10 * time.Second},
		{"system", "sysinfo", 5000, 5 * time.Second},
		{"file", "disk_usage", 0, 5 * time.Second},
		{"shell", "run_script", 0, 30 * time.Second},
		{"", EdgeCallTool, 0, 10 * time.Second}, // by name it is "other"; edge_call targets set the category
		{CategoryEdgeCall, "x", 0, 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.declared+"/"+tt.name, func(t *testing.T) {
			if got := toolTimeout(rules, Category(tt.declared, tt.name), tt.ownMS); got != tt.want {
				t.Fatalf("timeout %s, want %s", got, tt.want)
			}
		})
	}
}

// TestTimeoutArgumentSetsTheCallsTimeout: a tool whose parameters
// declare timeout_ms (bash) gets the timeout a call asks for, plus
// ArgTimeoutGrace, within its category's maximum; the command on the
// wire says so. Before, every such call was cut at the category's default.
func TestTimeoutArgumentSetsTheCallsTimeout(t *testing.T) {
	withArg := []wire.ToolInfo{{Name: "bash", Description: "runs", Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{"command": map[string]any{"type": "string"},
			"timeout_ms": map[string]any{"type": "integer"}},
		"required": []any{"command"},
	}}}
	withoutArg := []wire.ToolInfo{{Name: "bash", Description: "runs", TimeoutMS: 45_000, Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}},
	}}}
	grace := ArgTimeoutGrace.Milliseconds()
	exec := DefaultTimeoutRules[CategoryExec]
	tests := []struct {
		name  string
		tools []wire.ToolInfo
		args  string
		want  int64
	}{
		{"asked", withArg, `{"command":"sleep 60","timeout_ms":120000}`, 120_000 + grace},
		{"short", withArg, `{"command":"true","timeout_ms":1}`, 1 + grace},
		{"beyond the maximum", withArg, `{"command":"true","timeout_ms":9000000}`, exec.Max.Milliseconds()},
		{"beyond any clock", withArg, `{"command":"true","timeout_ms":1e300}`, exec.Max.Milliseconds()},
		{"not asked", withArg, `{"command":"true"}`, exec.Default.Milliseconds()},
		{"zero", withArg, `{"command":"true","timeout_ms":0}`, exec.Default.Milliseconds()},
		{"negative", withArg, `{"command":"true","timeout_ms":-5}`, exec.Default.Milliseconds()},
		// Not a parameter of the tool: the tool's own timeout holds.
		{"undeclared", withoutArg, `{"command":"true","timeout_ms":120000}`, 45_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessTools(t, transcript(callTurn("c", "pi-1__bash", tt.args), `{"content":"{{result c}}"}`), tt.tools, nil)
			var sent atomic.Int64
			h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
				sent.Store(p.TimeoutMS)
				h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: p.Tool, Result: "ran", RequestID: cmd.RequestID, ElapsedMS: 1})
			}
			ans := h.chat(t, "go")
			if ans.Err != nil || ans.Text != "ran" {
				t.Fatalf("answer %+v", ans)
			}
			if got := sent.Load(); got != tt.want {
				t.Fatalf("timeout_ms on the wire %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEdgeCall(t *testing.T) {
	agentAnswers := func(h *harness) {
		h.edge.onPrompt = func(cmd wire.Command, p wire.PromptPayload) {
			h.edge.reply(wire.PromptResult{Status: wire.StatusSuccess, Content: "the agent says: " + p.Prompt, AgentID: "pi-1",
				RequestID: cmd.RequestID, ToolsExecuted: []wire.ToolExecuted{{Tool: "echo", Success: true}}})
		}
	}
	tests := []struct {
		name, args string
		want       []string
		tools, pr  int32 // tool and prompt commands expected
	}{
		{"natural language", `{"agent_id":"pi-1","query":"how warm is it?"}`,
			[]string{"the agent says: how warm is it?", "[agent pi-1 ran: echo ok]"}, 0, 1},
		{"structured", `{"agent_id":"pi-1","action":"echo","params":{"text":"s"}}`, []string{"echo:s"}, 1, 0},
		{"structured with bad params", `{"agent_id":"pi-1","action":"echo","params":{"n":1}}`,
			[]string{"Error (invalid_params)", `missing "text"`}, 0, 0},
		{"unknown action", `{"agent_id":"pi-1","action":"fly"}`, []string{"Error (not_found)", "Its actions: echo"}, 0, 0},
		{"unknown agent", `{"agent_id":"pi-9","query":"hi"}`, []string{"Error (agent_offline)", `"pi-9" is unknown`, "Online agents: pi-1"}, 0, 0},
		{"neither query nor action", `{"agent_id":"pi-1"}`, []string{"Error (invalid_params)", "either query or action"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessTools(t, transcript(callTurn("e", EdgeCallTool, tt.args), `{"content":"{{result e}}"}`), schemaTools, nil)
			var tools, prompts atomic.Int32
			h.edge.onTool = countingEcho(h, &tools)
			agentAnswers(h)
			inner := h.edge.onPrompt
			h.edge.onPrompt = func(cmd wire.Command, p wire.PromptPayload) { prompts.Add(1); inner(cmd, p) }
			ans := h.chat(t, "go")
			for _, w := range tt.want {
				if !strings.Contains(ans.Text, w) {
					t.Fatalf("answer %q lacks %q", ans.Text, w)
				}
			}
			if tools.Load() != tt.tools || prompts.Load() != tt.pr {
				t.Fatalf("sent %d tool and %d prompt commands, want %d and %d", tools.Load(), prompts.Load(), tt.tools, tt.pr)
			}
			recs := h.audit.All()
			if len(recs) != 1 || recs[0].Tool != EdgeCallTool {
				t.Fatalf("audit %+v", recs)
			}
		})
	}
}

func TestEdgeCallOfferedOnlyWithAgentsOnline(t *testing.T) {
	h := newHarnessTools(t, transcript(`{"content":"x"}`), schemaTools, nil)
	box := &EdgeToolbox{Edges: h.edges}
	names := func() []string {
		var n []string
		for _, d := range box.Defs() {
			n = append(n, d.Name)
		}
		return n
	}
	if got := strings.Join(names(), ","); got != "pi-1__echo,edge_call" {
		t.Fatalf("tools %s", got)
	}
	defs := box.Defs()
	if desc := defs[len(defs)-1].Description; !strings.Contains(desc, "pi-1") {
		t.Fatalf("edge_call description does not list the agent: %q", desc)
	}
	h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: wire.PresenceOffline}})
	testenv.Eventually(t, 5*time.Second, func() bool { return len(names()) == 0 }, "agent offline")
}

func TestCompactModeAndSelection(t *testing.T) {
	tools := append([]wire.ToolInfo{{Name: "other", Description: "another tool", Parameters: map[string]any{"type": "object"}}}, schemaTools...)
	h := newHarnessTools(t, transcript(`{"content":"x"}`), tools, nil)
	size := func(b *EdgeToolbox) int {
		raw, err := json.Marshal(b.Defs())
		if err != nil {
			t.Fatal(err)
		}
		return len(raw)
	}
	direct := &EdgeToolbox{Edges: h.edges}
	compact := &EdgeToolbox{Edges: h.edges, Mode: ToolsCompact}
	selected := &EdgeToolbox{Edges: h.edges, Select: map[string][]string{"pi-1": {"echo"}}}
	if d := compact.Defs(); len(d) != 1 || d[0].Name != EdgeCallTool || !strings.Contains(d[0].Description, "actions: other, echo(text)") {
		t.Fatalf("compact defs %+v", d)
	}
	if size(compact) >= size(direct) || size(selected) >= size(direct) {
		t.Fatalf("request bytes: direct %d, compact %d, selected %d", size(direct), size(compact), size(selected))
	}
	if _, bad := selected.Resolve(llm.ToolCall{Name: "pi-1__other", Arguments: json.RawMessage(`{}`)}); bad == nil || bad.ErrorType() != wire.ErrNotFound {
		t.Fatalf("a tool left out by selection resolved: %+v", bad)
	}
	if _, bad := compact.Resolve(llm.ToolCall{Name: "pi-1__echo", Arguments: json.RawMessage(`{}`)}); bad == nil {
		t.Fatal("compact mode resolved a direct tool name it does not offer")
	}
	// A query runs the agent's own loop with all its tools: a selection
	// refuses it unless it names edge_call.
	query := llm.ToolCall{Name: EdgeCallTool, Arguments: json.RawMessage(`{"agent_id":"pi-1","query":"run other"}`)}
	withQuery := &EdgeToolbox{Edges: h.edges, Select: map[string][]string{"pi-1": {"echo", EdgeCallTool}}}
	otherAgent := &EdgeToolbox{Edges: h.edges, Select: map[string][]string{"pi-9": {"echo"}}}
	for _, tc := range []struct {
		name   string
		box    *EdgeToolbox
		refuse bool
	}{
		{"no selection", direct, false},
		{"selection of another agent", otherAgent, false},
		{"selection without edge_call", selected, true},
		{"selection without edge_call, compact", &EdgeToolbox{Edges: h.edges, Mode: ToolsCompact, Select: selected.Select}, true},
		{"selection with edge_call", withQuery, false},
	} {
		target, bad := tc.box.Resolve(query)
		if tc.refuse {
			if bad == nil || bad.ErrorType() != wire.ErrPermissionDenied || !strings.Contains(bad.ErrorText(), "echo") {
				t.Errorf("%s: a query resolved: %+v %+v", tc.name, target, bad)
			}
			continue
		}
		if bad != nil || target.Prompt == nil || target.AgentID != "pi-1" {
			t.Errorf("%s: query refused: %+v", tc.name, bad)
		}
	}
	// Actions stay as selected.
	if target, bad := selected.Resolve(llm.ToolCall{Name: EdgeCallTool, Arguments: json.RawMessage(`{"agent_id":"pi-1","action":"echo","params":{"text":"x"}}`)}); bad != nil || target.Tool != "echo" {
		t.Errorf("selected action: %+v %+v", target, bad)
	}
	if _, bad := selected.Resolve(llm.ToolCall{Name: EdgeCallTool, Arguments: json.RawMessage(`{"agent_id":"pi-1","action":"other"}`)}); bad == nil || bad.ErrorType() != wire.ErrNotFound {
		t.Errorf("an action left out by selection resolved: %+v", bad)
	}
}

// memHistory is a HistoryStore in memory with fault switches.
type memHistory struct {
	mu       sync.Mutex
	m        map[string][]llm.Message
	loadErr  error
	storeErr error
}

func (s *memHistory) LoadHistory(_ context.Context, id string) ([]llm.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return nil, s.loadErr
	}
	return append([]llm.Message(nil), s.m[id]...), nil
}

func (s *memHistory) AppendHistory(_ context.Context, id string, msgs []llm.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.storeErr != nil {
		return s.storeErr
	}
	if s.m == nil {
		s.m = map[string][]llm.Message{}
	}
	s.m[id] = append(s.m[id], msgs...)
	return nil
}

func TestHistorySurvivesARestartOfTheActorSystem(t *testing.T) {
	// Turn 0 and 1 answer the first chat; turn 2 can only be reached when
	// the second chat's request carries the first chat's two assistant
	// messages, so the answer proves the history came back.
	tr := transcript(callTurn("c1", "pi-1__echo", `{"text":"one"}`), `{"content":"first: {{result c1}}"}`,
		`{"content":"second, remembering {{result c1}}"}`)
	store := &memHistory{}
	h1 := newHarness(t, tr, func(o *ConvOptions) { o.History = store })
	h1.edge.onTool = echoReply(h1)
	if ans := h1.chat(t, "first"); ans.Err != nil || ans.Text != "first: echo:one" {
		t.Fatalf("first chat %+v", ans)
	}
	// Stop every conversation of the first system, as a process exit would.
	if err := StopAndWait(h1.sys.Root, h1.convs.PID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := len(store.m["c"]); n != 4 {
		t.Fatalf("stored %d messages, want 4 (user, assistant+call, tool, assistant)", n)
	}
	h2 := newHarness(t, tr, func(o *ConvOptions) { o.History = store })
	if ans := h2.chat(t, "second"); ans.Err != nil || ans.Text != "second, remembering echo:one" {
		t.Fatalf("second chat after restart %+v", ans)
	}
	if n := len(store.m["c"]); n != 6 {
		t.Fatalf("stored %d messages, want 6", n)
	}
}

func TestHistoryFaultsAreClearErrors(t *testing.T) {
	boom := errors.New("disk on fire")
	t.Run("load", func(t *testing.T) {
		store := &memHistory{loadErr: boom}
		h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.History = store })
		ans := h.chat(t, "x")
		if !errors.Is(ans.Err, ErrHistory) || !errors.Is(ans.Err, boom) {
			t.Fatalf("answer %+v", ans)
		}
		store.mu.Lock()
		store.loadErr = nil
		store.mu.Unlock()
		// The conversation stopped itself; the next chat loads again.
		h.edge.onTool = echoReply(h)
		testenv.Eventually(t, 5*time.Second, func() bool {
			res, err := Ask(h.sys.Root, h.convs.PID, &Chat{ConversationID: "c", Text: "y"}, 5*time.Second)
			return err == nil && res.(*Answer).Err == nil
		}, "conversation answers again")
	})
	t.Run("store", func(t *testing.T) {
		store := &memHistory{storeErr: boom}
		h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.History = store })
		ans := h.chat(t, "x")
		if !errors.Is(ans.Err, ErrHistory) || !errors.Is(ans.Err, boom) {
			t.Fatalf("answer %+v", ans)
		}
	})
}

func TestLocalToolbox(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(sys.Shutdown)
	p, err := scripted.Parse([]byte(transcript(`{"content":"","tool_calls":[
		{"id":"a","name":"up","arguments":{"s":"x"}},{"id":"b","name":"slow","arguments":{}},{"id":"c","name":"boom","arguments":{}}]}`,
		`{"content":"{{result a}} | {{result b}} | {{result c}}"}`)))
	if err != nil {
		t.Fatal(err)
	}
	box := &localBox{tools: map[string]func(context.Context, json.RawMessage) skills.Output{
		"up": func(_ context.Context, a json.RawMessage) skills.Output {
			return skills.Output{Content: []skills.Block{skills.TextBlock(strings.ToUpper(string(a)))}}
		},
		"slow": func(ctx context.Context, _ json.RawMessage) skills.Output {
			<-ctx.Done()
			return skills.Output{Content: []skills.Block{{Kind: skills.KindError, Text: "gave up"}}}
		},
		"boom": func(context.Context, json.RawMessage) skills.Output { panic("tool bug") },
	}}
	convs, err := SpawnConversations(sys.Root, ConvOptions{Provider: p, Toolbox: box,
		TimeoutRules: map[string]TimeoutRule{CategoryOther: {Default: 100 * time.Millisecond, Max: time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Ask(sys.Root, convs.PID, &Chat{ConversationID: "l", Text: "go"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ans := res.(*Answer)
	want := `{"S":"X"} | Error (timeout) from tool "slow": gave up | Error (internal) from tool "boom": tool "boom" panicked: tool bug`
	if ans.Err != nil || ans.Text != want {
		t.Fatalf("answer %+v\nwant %s", ans, want)
	}
}

// localBox is a Toolbox of in-process functions.
type localBox struct {
	tools map[string]func(context.Context, json.RawMessage) skills.Output
}

func (b *localBox) Defs() []llm.ToolDef {
	var d []llm.ToolDef
	for n := range b.tools {
		d = append(d, llm.ToolDef{Name: n})
	}
	return d
}

func (b *localBox) Resolve(call llm.ToolCall) (Target, *skills.Output) {
	f, ok := b.tools[call.Name]
	if !ok {
		return Target{}, toolError(wire.ErrNotFound, "no such tool")
	}
	return Target{Tool: call.Name, Category: CategoryOther, Args: call.Arguments, Local: f}, nil
}

// failingProvider fails every completion with err.
type failingProvider struct{ err error }

func (p failingProvider) Name() string { return "failing" }
func (p failingProvider) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, p.err
}

type recordingLLMLog struct {
	testenv.Recorded[persistence.LLMCall]
}

func (l *recordingLLMLog) RecordLLMCall(_ context.Context, c persistence.LLMCall) error {
	l.Add(c)
	return nil
}

func TestLLMCallsAreAudited(t *testing.T) {
	tests := []struct {
		name     string
		provider llm.Provider
		status   string
		errType  string
	}{
		{"success", nil, persistence.StatusSuccess, ""},
		{"deadline", failingProvider{context.DeadlineExceeded}, persistence.StatusError, "timeout"},
		{"untyped", failingProvider{errors.New("something broke")}, persistence.StatusError, "internal"},
		{"typed", failingProvider{&llm.Error{Kind: llm.KindRateLimited, Provider: "openai", Status: 429}}, persistence.StatusError, "rate_limited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &recordingLLMLog{}
			h := newHarness(t, transcript(`{"content":"hi"}`), func(o *ConvOptions) {
				o.LLMLog = log
				if tt.provider != nil {
					o.Provider = tt.provider
				}
			})
			h.chat(t, "x")
			recs := log.All()
			if len(recs) != 1 {
				t.Fatalf("%d llm records, want 1", len(recs))
			}
			r := recs[0]
			if r.Status != tt.status || r.ErrorType != tt.errType || r.ConversationID != "c" || r.Node != "orch" || r.Provider == "" {
				t.Fatalf("record %+v", r)
			}
		})
	}
}

// funcProvider answers with f.
type funcProvider func(req llm.Request) (llm.Response, error)

func (f funcProvider) Name() string { return "func" }
func (f funcProvider) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	return f(req)
}

func TestInvalidJSONArgumentsFromTheModel(t *testing.T) {
	var runs atomic.Int32
	p := funcProvider(func(req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			return llm.Response{Message: llm.Message{Content: "saw: " + last.Content}}, nil
		}
		// What a provider hands over when a small model writes broken JSON.
		return llm.Response{Message: llm.Message{ToolCalls: []llm.ToolCall{{ID: "c", Name: "pi-1__echo",
			Arguments: json.RawMessage(`"{text: hi"`), ArgumentsError: "unexpected end of JSON input"}}}}, nil
	})
	h := newHarnessTools(t, `{"name":"unused","turns":[{"content":"x"}]}`, schemaTools, func(o *ConvOptions) { o.Provider = p })
	h.edge.onTool = countingEcho(h, &runs)
	ans := h.chat(t, "go")
	for _, w := range []string{"Error (invalid_params)", "not valid JSON", "unexpected end of JSON input", "{text: hi", "Required: [text]"} {
		if !strings.Contains(ans.Text, w) {
			t.Fatalf("answer %q lacks %q", ans.Text, w)
		}
	}
	if runs.Load() != 0 {
		t.Fatal("a call with broken arguments was sent to the agent")
	}
}

func TestStaleIdleRequestDoesNotStopABusyConversation(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	release := make(chan struct{})
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) { <-release; echoReply(h)(cmd, p) }
	wait := askLater(h.sys.Root, h.convs.PID, &Chat{ConversationID: "c", Text: "go"}, 20*time.Second)
	child := actor.NewPID(h.sys.Address(), convPath("c"))
	testenv.Eventually(t, 5*time.Second, func() bool {
		_, ok := h.sys.ProcessRegistry.Get(child)
		return ok
	}, "conversation started")
	// What an idle timer that fired just before the chat arrived sends.
	h.sys.Root.Send(h.convs.PID, &passivate{id: "c", pid: child, received: 0})
	close(release)
	res, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	if ans := res.(*Answer); ans.Err != nil || ans.Text != "tool said: echo:hi" {
		t.Fatalf("answer %+v", ans)
	}
	if _, ok := h.sys.ProcessRegistry.Get(child); !ok {
		t.Fatal("the conversation was stopped by a stale idle request")
	}
}

func TestSaturatedAgentPushesBackWithBusy(t *testing.T) {
	tr := transcript(`{"content":"","tool_calls":[
		{"id":"a","name":"pi-1__echo","arguments":{"text":"A"}},
		{"id":"b","name":"pi-1__echo","arguments":{"text":"B"}}]}`,
		`{"content":"{{result a}} | {{result b}}"}`)
	// One request may wait on the agent: the second is refused at once
	// with busy, while the first completes.
	h := newHarnessEdges(t, tr, nil, func(o *EdgeOptions) { o.MaxInFlight = 1 }, nil)
	var cmds []wire.Command
	var mu sync.Mutex
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
		mu.Lock()
		cmds = append(cmds, cmd)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond) // still in flight when the second call is dispatched
		echoReply(h)(cmd, p)
	}
	ans := h.chat(t, "go")
	// Which call reaches the agent first is not ordered; one runs, one is refused.
	if strings.Count(ans.Text, "Error (busy)") != 1 || strings.Count(ans.Text, "echo:") != 1 || !strings.Contains(ans.Text, "saturated") {
		t.Fatalf("answer %q", ans.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cmds) != 1 {
		t.Fatalf("%d commands reached the agent, want 1", len(cmds))
	}
	// Every command carries an expiry the agent enforces.
	if cmds[0].ExpiresAt <= time.Now().UnixMilli() || cmds[0].TTLMS <= 0 {
		t.Fatalf("command without a usable expiry: %+v", cmds[0])
	}
}

func TestToolOfAnAgentStillListingIsBusyNotMissing(t *testing.T) {
	tr := transcript(callTurn("a", "pi-1__echo", `{"text":"x"}`), `{"content":"A={{result a}}"}`,
		callTurn("b", EdgeCallTool, `{"agent_id":"pi-1","action":"echo","params":{"text":"y"}}`), `{"content":"B={{result b}}"}`)
	h := newHarness(t, tr, nil)
	h.edge.onTool = echoReply(h)
	status := func(s string) {
		h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: s}})
	}
	status(wire.PresenceOffline)
	testenv.Eventually(t, 5*time.Second, func() bool { return !h.edges.Catalog().Agents["pi-1"].Online }, "agent offline")
	// It comes back, but its tools_list is lost (it had not subscribed yet).
	h.edge.lostToolsLists.Store(1)
	status(wire.PresenceOnline)
	testenv.Eventually(t, 5*time.Second, func() bool {
		a := h.edges.Catalog().Agents["pi-1"]
		return a.Online && a.Listing && len(a.Tools) == 0
	}, "agent online and listing")
	for i, want := range []string{"A=Error (busy)", "B=Error (busy)"} {
		ans := h.chat(t, fmt.Sprint("call ", i))
		if !strings.Contains(ans.Text, want) || !strings.Contains(ans.Text, "still listing its tools") {
			t.Fatalf("answer %q, want %q", ans.Text, want)
		}
	}
}
