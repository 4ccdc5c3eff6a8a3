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
)

// fakeEdge plays an edge agent behind a Publisher: it answers tools_list
// itself and hands tool commands to onTool.
type fakeEdge struct {
	t      *testing.T
	id     string
	root   *actor.RootContext
	edges  *Edges
	onTool func(cmd wire.Command, p wire.ToolPayload) // nil: never answer
	// onPrompt answers prompt commands; nil: never answer.
	onPrompt func(cmd wire.Command, p wire.PromptPayload)
	// tools is what tools_list answers; nil: one "echo" tool.
	tools []wire.ToolInfo
	// lostToolsLists is how many tools_list commands to lose, as a broker
	// does for an agent that has not subscribed yet.
	lostToolsLists atomic.Int32
	// others, when set, lets commands to other agents pass unanswered
	// (agents that never answer tools_list).
	others atomic.Bool
}

func (f *fakeEdge) Publish(_ context.Context, topic string, payload []byte) error {
	cmd, err := wire.DecodeCommand(payload)
	if err != nil {
		f.t.Errorf("orchestrator sent a malformed command on %s: %v", topic, err)
		return nil
	}
	if topic != wire.CommandsTopic(f.id) && f.others.Load() {
		return nil
	}
	if topic != wire.CommandsTopic(f.id) {
		f.t.Errorf("command published on %s, want %s", topic, wire.CommandsTopic(f.id))
	}
	switch cmd.Command {
	case wire.CmdToolsList:
		if f.lostToolsLists.Add(-1) >= 0 {
			return nil
		}
		f.lostToolsLists.Store(0)
		tools := f.tools
		if tools == nil {
			tools = []wire.ToolInfo{{Name: "echo", Description: "echoes", TimeoutMS: 1000}}
		}
		f.reply(wire.ToolsList{RequestID: cmd.RequestID, Tools: tools})
	case wire.CmdPrompt:
		p, err := wire.DecodePromptPayload(cmd.Payload)
		if err != nil {
			f.t.Errorf("bad prompt payload: %v", err)
			return nil
		}
		if f.onPrompt != nil {
			go f.onPrompt(cmd, p)
		}
	case wire.CmdPing:
		// Like the public agent: the answer carries no request_id.
		f.reply(wire.PingResult{Pong: true})
	case wire.CmdTool:
		p, err := wire.DecodeToolPayload(cmd.Payload)
		if err != nil {
			f.t.Errorf("bad tool payload: %v", err)
			return nil
		}
		if f.onTool != nil {
			go f.onTool(cmd, p)
		}
	}
	return nil
}

func (f *fakeEdge) reply(payload any) {
	r, err := wire.NewReport(f.id, "monitor", wire.ReportResult, time.Now().Unix(), payload)
	if err != nil {
		f.t.Error(err)
		return
	}
	f.root.Send(f.edges.PID, &ReportIn{AgentID: f.id, Report: r})
}

// recordingAudit is an AuditLog in memory.
type recordingAudit struct {
	testenv.Recorded[persistence.ToolCall]
}

func (a *recordingAudit) RecordToolCall(_ context.Context, c persistence.ToolCall) error {
	a.Add(c)
	return nil
}

// recordingEvents is an EventLog in memory.
type recordingEvents struct {
	testenv.Recorded[persistence.Event]
}

func (r *recordingEvents) RecordEvent(_ context.Context, e persistence.Event) error {
	r.Add(e)
	return nil
}

func (r *recordingEvents) kinds() []string {
	var k []string
	for _, e := range r.All() {
		k = append(k, e.Kind)
	}
	return k
}

type harness struct {
	events *recordingEvents
	sys    *actor.ActorSystem
	edge   *fakeEdge
	edges  *Edges
	convs  *Conversations
	audit  *recordingAudit
	logs   *testenv.Buffer
}

const echoTranscript = `{"name":"t","turns":[
 {"content":"calling","tool_calls":[{"id":"c1","name":"pi-1__echo","arguments":{"text":"hi"}}]},
 {"content":"tool said: {{result c1}}"}]}`

func newHarness(t *testing.T, transcript string, tune func(*ConvOptions)) *harness {
	t.Helper()
	return newHarnessTools(t, transcript, nil, tune)
}

// newHarnessTools is newHarness with the fake agent offering tools.
func newHarnessTools(t *testing.T, transcript string, tools []wire.ToolInfo, tune func(*ConvOptions)) *harness {
	t.Helper()
	return newHarnessEdges(t, transcript, tools, nil, tune)
}

// newHarnessEdges is newHarnessTools with edge options tuned too.
func newHarnessEdges(t *testing.T, transcript string, tools []wire.ToolInfo, tuneEdges func(*EdgeOptions), tune func(*ConvOptions)) *harness {
	t.Helper()
	logs := &testenv.Buffer{}
	log := logs.Logger(slog.LevelDebug)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	t.Cleanup(sys.Shutdown)
	h := &harness{sys: sys, audit: &recordingAudit{}, logs: logs, events: &recordingEvents{}}
	h.edge = &fakeEdge{t: t, id: "pi-1", root: sys.Root, tools: tools}
	eo := EdgeOptions{Publisher: h.edge, Logger: log, TickInterval: 20 * time.Millisecond, Events: h.events, Node: "orch"}
	if tuneEdges != nil {
		tuneEdges(&eo)
	}
	edges, err := SpawnEdges(sys.Root, eo)
	if err != nil {
		t.Fatal(err)
	}
	// Shutdown stops no actor: the agents' ticks would go on for the rest
	// of the package's tests (a test of a thousand agents made them a
	// burden that failed later tests on an emulated ARM board).
	t.Cleanup(func() { _ = StopAndWait(sys.Root, edges.PID, 10*time.Second) })
	h.edges, h.edge.edges = edges, edges
	p, err := scripted.Parse([]byte(transcript))
	if err != nil {
		t.Fatal(err)
	}
	o := ConvOptions{Provider: p, Edges: edges, Audit: h.audit, Node: "orch", Logger: log}
	if tune != nil {
		tune(&o)
	}
	if h.convs, err = SpawnConversations(sys.Root, o); err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: wire.PresenceOnline}})
	testenv.Eventually(t, 5*time.Second, func() bool {
		a, ok := edges.Catalog().Agents["pi-1"]
		return ok && a.Online && len(a.Tools) == min(max(1, len(tools)), MaxAgentTools)
	}, "agent pi-1 online with tools")
	return h
}

// chat sends text in conversation c and returns the answer.
func (h *harness) chat(t *testing.T, text string) *Answer {
	t.Helper()
	return h.ask(t, &Chat{ConversationID: "c", Text: text})
}

// ask sends c and returns the answer; an Ask that fails fails the test.
func (h *harness) ask(t *testing.T, c *Chat) *Answer {
	t.Helper()
	res, err := Ask(h.sys.Root, h.convs.PID, c, 20*time.Second)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	return res.(*Answer)
}

func echoReply(h *harness) func(wire.Command, wire.ToolPayload) {
	return func(cmd wire.Command, p wire.ToolPayload) {
		var args map[string]string
		_ = json.Unmarshal(p.Parameters, &args)
		h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: p.Tool, Result: "echo:" + args["text"], RequestID: cmd.RequestID, ElapsedMS: 1})
	}
}

func TestToolCallRoundTrip(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	h.edge.onTool = echoReply(h)
	ans := h.chat(t, "say hi")
	if ans.Err != nil || ans.Text != "tool said: echo:hi" || ans.ToolCalls != 1 || ans.Iterations != 1 {
		t.Fatalf("answer %+v", ans)
	}
	recs := h.audit.All()
	if len(recs) != 1 || recs[0].Status != "success" || recs[0].AgentID != "pi-1" || recs[0].Tool != "pi-1__echo" ||
		recs[0].CallID != "c1" || recs[0].Side != "orchestrator" || recs[0].RequestID == "" || string(recs[0].Params) != `{"text":"hi"}` {
		t.Fatalf("audit %+v", recs)
	}
}

func TestPanickingToolCallIsRestartedAndConversationEnds(t *testing.T) {
	var attempts atomic.Int32
	h := newHarness(t, echoTranscript, func(o *ConvOptions) {
		o.fault = func(_ llm.ToolCall, attempt int) {
			attempts.Store(int32(attempt))
			if attempt < 3 {
				panic("injected fault")
			}
		}
	})
	var sent atomic.Int32
	reply := echoReply(h)
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
		sent.Add(1)
		reply(cmd, p)
	}
	ans := h.chat(t, "say hi")
	if ans.Err != nil || ans.Text != "tool said: echo:hi" {
		t.Fatalf("answer %+v", ans)
	}
	if attempts.Load() != 3 || sent.Load() != 1 {
		t.Fatalf("attempts %d, commands sent %d; want 3 attempts and exactly one command", attempts.Load(), sent.Load())
	}
}

func TestToolCallThatKeepsFailingBecomesAnError(t *testing.T) {
	h := newHarness(t, echoTranscript, func(o *ConvOptions) {
		o.CallRetries = 2
		o.fault = func(llm.ToolCall, int) { panic("always broken") }
	})
	ans := h.chat(t, "say hi")
	if ans.Err != nil {
		t.Fatalf("conversation failed: %v", ans.Err)
	}
	if !strings.Contains(ans.Text, "Error (internal)") || !strings.Contains(ans.Text, "always broken") {
		t.Fatalf("answer %q does not carry the tool failure", ans.Text)
	}
	recs := h.audit.All()
	if len(recs) != 1 || recs[0].Status != "error" || recs[0].ErrorType != string(wire.ErrInternal) {
		t.Fatalf("audit %+v", recs)
	}
}

func TestSilentAgentTimesOut(t *testing.T) {
	h := newHarness(t, echoTranscript, func(o *ConvOptions) {
		o.ReplySlack = 50 * time.Millisecond
	})
	// The agent advertised a 1 s timeout for echo and then never answers,
	// like an agent killed mid-call whose last will has not arrived.
	start := time.Now()
	ans := h.chat(t, "say hi")
	took := time.Since(start)
	if ans.Err != nil || !strings.Contains(ans.Text, "Error (timeout)") {
		t.Fatalf("answer %+v", ans)
	}
	if took > 5*time.Second {
		t.Fatalf("timeout error after %s, want it near the tool's 1 s timeout", took)
	}
	if recs := h.audit.All(); len(recs) != 1 || recs[0].ErrorType != string(wire.ErrTimeout) {
		t.Fatalf("audit %+v", recs)
	}
}

func TestAgentGoingOfflineFailsCallsFast(t *testing.T) {
	h := newHarness(t, echoTranscript, func(o *ConvOptions) {
		o.TimeoutRules = map[string]TimeoutRule{CategoryOther: {Default: time.Minute, Max: time.Minute}}
	})
	h.edge.onTool = func(wire.Command, wire.ToolPayload) {
		// The agent dies mid-call: the broker publishes its last will.
		h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: wire.PresenceOffline}})
	}
	ans := h.chat(t, "say hi")
	if ans.Err != nil || !strings.Contains(ans.Text, "Error (agent_offline)") {
		t.Fatalf("answer %+v", ans)
	}
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.Join(h.events.kinds(), ",") == "agent_online,agent_offline"
	}, "presence audited")
}

// TestToolsListAskedAgainOnOnlineStatus: an agent that reconnects is heard
// first from a report sent before it re-subscribed to its commands, so the
// tools_list that brings it back online is lost; the online status it sends
// once subscribed must bring a new tools_list soon (ToolsListRetry), not
// only when the lost one times out (10 s here, the default), or it stays
// online with no tools and refuses calls as busy meanwhile.
func TestToolsListAskedAgainOnOnlineStatus(t *testing.T) {
	h := newHarnessEdges(t, echoTranscript, nil, nil, nil)
	status := func(s string) {
		h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: s}})
	}
	agent := func() AgentInfo { return h.edges.Catalog().Agents["pi-1"] }
	status(wire.PresenceOffline) // its last will: the connection dropped
	testenv.Eventually(t, 5*time.Second, func() bool { return !agent().Online }, "agent offline")

	h.edge.lostToolsLists.Store(1)
	hb, err := wire.NewReport("pi-1", "monitor", wire.ReportHeartbeat, time.Now().Unix(), wire.Heartbeat{UptimeSec: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.sys.Root.Send(h.edges.PID, &ReportIn{AgentID: "pi-1", Report: hb})
	testenv.Eventually(t, 5*time.Second, func() bool {
		return agent().Online && h.edge.lostToolsLists.Load() == 0
	}, "agent online, its tools_list lost")
	status(wire.PresenceOnline)
	testenv.Eventually(t, 5*time.Second, func() bool { a := agent(); return len(a.Tools) == 1 && !a.Listing }, "tools listed again")
}

// TestPendingCommandResent: a result the agent published may be lost on
// the way (a broker that restarted kept no session; in a cluster, the
// node the broker handed it to died before relaying it). The agent's
// online status after it reconnects, and a cluster node leaving
// (ResendPending), must each bring the pending command again under its
// request_id, which the agent answers from its request log.
func TestPendingCommandResent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger func(h *harness) any
	}{
		{"agent online again", func(*harness) any {
			return &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: wire.PresenceOnline}}
		}},
		{"cluster node left", func(*harness) any { return &ResendPending{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, echoTranscript, nil)
			var mu sync.Mutex
			seen := map[string]int{}
			h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
				mu.Lock()
				seen[cmd.RequestID]++
				n := seen[cmd.RequestID]
				mu.Unlock()
				if n == 1 {
					// The result of the first delivery is lost.
					h.sys.Root.Send(h.edges.PID, tc.trigger(h))
					return
				}
				echoReply(h)(cmd, p)
			}
			ans := h.chat(t, "say hi")
			if ans.Err != nil || ans.Text != "tool said: echo:hi" {
				t.Fatalf("answer %+v", ans)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 {
				t.Fatalf("commands by request_id %v, want one request sent again under its id", seen)
			}
			for id, n := range seen {
				if n != 2 {
					t.Fatalf("request %s sent %d times, want 2", id, n)
				}
			}
		})
	}
}

func TestUnknownAndLateRepliesAreDropped(t *testing.T) {
	h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.ReplySlack = 10 * time.Millisecond })
	late := make(chan wire.Command, 1)
	h.edge.onTool = func(cmd wire.Command, _ wire.ToolPayload) { late <- cmd }
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: "stray", RequestID: "no-such-request"})
	ans := h.chat(t, "say hi")
	if !strings.Contains(ans.Text, "Error (timeout)") {
		t.Fatalf("answer %+v", ans)
	}
	cmd := <-late
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: "too late", RequestID: cmd.RequestID})
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.Count(h.logs.String(), "unknown or expired request_id") >= 2
	}, "both drops logged")
	// Audited, not only logged: an auditor sees the result that came late.
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.Count(strings.Join(h.events.kinds(), ","), EventLateResult) == 2
	}, "both drops audited")
	var lateEvents []string
	for _, e := range h.events.All() {
		if e.Kind == EventLateResult {
			lateEvents = append(lateEvents, string(e.Detail))
		}
	}
	if !strings.Contains(lateEvents[0], `"request_id":"no-such-request"`) || !strings.Contains(lateEvents[1], `"result_excerpt":"too late"`) {
		t.Fatalf("late result events %v", lateEvents)
	}
	if strings.Contains(ans.Text, "stray") || strings.Contains(ans.Text, "too late") {
		t.Fatalf("a stray reply reached the conversation: %q", ans.Text)
	}
}

func TestUnknownToolAndBadArguments(t *testing.T) {
	h := newHarness(t, `{"name":"t","turns":[
	 {"content":"","tool_calls":[{"id":"a","name":"pi-9__nope","arguments":{}},{"id":"b","name":"pi-1__echo","arguments":"not an object"}]},
	 {"content":"A={{result a}} B={{result b}}"}]}`, nil)
	ans := h.chat(t, "x")
	if !strings.Contains(ans.Text, `A=Error (not_found) from tool "pi-9__nope"`) || !strings.Contains(ans.Text, "Available tools: pi-1__echo") {
		t.Fatalf("unknown tool answer %q", ans.Text)
	}
	if !strings.Contains(ans.Text, "B=Error (invalid_params)") {
		t.Fatalf("bad arguments answer %q", ans.Text)
	}
	if n := len(h.audit.All()); n != 2 {
		t.Fatalf("%d audit records, want 2", n)
	}
}

// loopTranscript calls the echo tool n times with different arguments,
// then (turn n+1) answers in text.
func loopTranscript(n int) string {
	var turns []string
	for i := range n {
		turns = append(turns, fmt.Sprintf(`{"content":"again","tool_calls":[{"id":"x%d","name":"pi-1__echo","arguments":{"text":"x%d"}}]}`, i, i))
	}
	turns = append(turns, `{"content":"summary from what I have"}`)
	return `{"name":"loop","turns":[` + strings.Join(turns, ",") + `]}`
}

func TestMaxIterations(t *testing.T) {
	tests := []struct {
		onLimit  string
		wantErr  bool
		wantText string
	}{
		{OnLimitError, true, ""},
		// The tool-less final call: turn 4 of the transcript still asks
		// for a tool, which is not run; its text is the answer.
		{OnLimitAnswer, false, "again"},
	}
	for _, tt := range tests {
		t.Run(tt.onLimit, func(t *testing.T) {
			h := newHarness(t, loopTranscript(10), func(o *ConvOptions) { o.MaxIterations = 3; o.OnLimit = tt.onLimit })
			h.edge.onTool = echoReply(h)
			ans := h.chat(t, "loop forever")
			if ans.Iterations != 3 || len(h.audit.All()) != 3 {
				t.Fatalf("answer %+v after %d audited calls, want 3 iterations", ans, len(h.audit.All()))
			}
			if tt.wantErr {
				if !errors.Is(ans.Err, ErrMaxIterations) {
					t.Fatalf("err %v, want ErrMaxIterations", ans.Err)
				}
				return
			}
			if ans.Err != nil || ans.Text != tt.wantText || !strings.Contains(ans.Limit, "max tool iterations") {
				t.Fatalf("answer %+v", ans)
			}
		})
	}
}

func TestPingWithoutRequestIDIsCorrelated(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	replyTo, replies := inbox(t, h.sys)
	cmd := wire.Command{Command: wire.CmdPing, Payload: json.RawMessage(`{}`), RequestID: "ping-1"}
	h.sys.Root.Send(h.edges.PID, &Dispatch{AgentID: "pi-1", Command: cmd, ReplyTo: replyTo, Deadline: time.Now().Add(5 * time.Second)})
	res := receive(t, replies, 5*time.Second)
	if r, ok := res.(*Reply); !ok || r.RequestID != "ping-1" {
		t.Fatalf("got %#v", res)
	}
}

func TestDispatchToUnknownAgent(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	replyTo, replies := inbox(t, h.sys)
	cmd := wire.Command{Command: wire.CmdPing, Payload: json.RawMessage(`{}`), RequestID: "p"}
	h.sys.Root.Send(h.edges.PID, &Dispatch{AgentID: "ghost", Command: cmd, ReplyTo: replyTo, Deadline: time.Now().Add(time.Second)})
	res := receive(t, replies, 5*time.Second)
	if f, ok := res.(*DispatchFailed); !ok || f.Type != wire.ErrAgentOffline {
		t.Fatalf("got %#v", res)
	}
}

// TestPlacedDispatches: a call a cluster's router placed here is tried on
// an agent this node has not heard of yet (it just joined: the agent's
// retained status is on its way), and a call that may have started
// elsewhere is never reported movable.
func TestPlacedDispatches(t *testing.T) {
	for _, tc := range []struct {
		name            string
		agent           string
		placed, started bool
		want            string // "sent", or the failure's movability: "movable", "fixed"
	}{
		{"unknown agent", "ghost", false, false, "movable"},
		{"unknown agent, may have started", "ghost", false, true, "fixed"},
		{"unknown agent, placed here", "ghost", true, true, "sent"},
		{"known agent", "pi-1", false, false, "sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := make(chan string, 4)
			h := newHarnessEdges(t, echoTranscript, nil, func(eo *EdgeOptions) {
				inner := eo.Publisher
				eo.Publisher = PublisherFunc(func(ctx context.Context, topic string, payload []byte) error {
					if cmd, err := wire.DecodeCommand(payload); err == nil && cmd.Command == wire.CmdTool {
						sent <- topic
						return nil
					}
					if topic == wire.CommandsTopic("ghost") {
						return nil // its tools_list: unanswered
					}
					return inner.Publish(ctx, topic, payload)
				})
			}, nil)
			replyTo, replies := inbox(t, h.sys)
			payload, _ := json.Marshal(wire.ToolPayload{Tool: "echo", Parameters: json.RawMessage(`{"text":"x"}`)})
			cmd := wire.Command{Command: wire.CmdTool, Payload: payload, RequestID: "tool-n1.1-1"}
			h.sys.Root.Send(h.edges.PID, &Dispatch{AgentID: tc.agent, Command: cmd, ReplyTo: replyTo,
				Deadline: time.Now().Add(5 * time.Second), Placed: tc.placed, Started: tc.started})
			if tc.want == "sent" {
				select {
				case topic := <-sent:
					if topic != wire.CommandsTopic(tc.agent) {
						t.Fatalf("sent on %q", topic)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the command was not sent to the agent")
				}
				return
			}
			f, ok := receive(t, replies, 5*time.Second).(*DispatchFailed)
			if !ok || f.Type != wire.ErrAgentOffline || f.Movable != (tc.want == "movable") {
				t.Fatalf("got %#v, want a failure %s", f, tc.want)
			}
		})
	}
}

func TestIdleConversationPassivatesAndComesBack(t *testing.T) {
	tr := echoTranscript[:len(echoTranscript)-2] + `,{"content":"remembered: {{result c1}}"}]}`
	store := &memHistory{}
	h := newHarness(t, tr, func(o *ConvOptions) { o.IdleTimeout = 300 * time.Millisecond; o.History = store })
	h.edge.onTool = echoReply(h)
	if ans := h.chat(t, "one"); ans.Err != nil {
		t.Fatal(ans.Err)
	}
	alive := func() bool {
		_, found := h.sys.ProcessRegistry.Get(actor.NewPID(h.sys.Address(), convPath("c")))
		return found
	}
	if !alive() {
		t.Fatal("conversation actor not found right after its chat")
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return !alive() }, "conversation actor stopped")
	// A new actor takes the conversation and loads its history: the
	// transcript's third turn is reached only with the first two in it.
	if ans := h.chat(t, "two"); ans.Err != nil || ans.Text != "remembered: echo:hi" {
		t.Fatalf("after passivation: %+v", ans)
	}
}
