package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// reportData writes a small, fully known audit trail.
func reportData(t *testing.T) string {
	t.Helper()
	s, path := openStore(t, Options{})
	ctx := context.Background()
	day1 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	at := func(min int) time.Time { return day1.Add(time.Duration(min) * time.Minute) }
	calls := []persistence.ToolCall{
		{Time: at(3), ConversationID: "c1", AgentID: "edge-1", Tool: "shell", Status: "success", ElapsedMs: 10},
		{Time: at(20), AgentID: "edge-1", Tool: "shell", Status: "success", ElapsedMs: 20},
		{Time: at(21), AgentID: "edge-1", Tool: "shell", Status: "error", ErrorType: "timeout", ElapsedMs: 30},
		{Time: at(22), AgentID: "edge-2", Tool: "read", Status: "success", ElapsedMs: 5},
		{Time: at(23), Tool: "http", Status: "error", ErrorType: "not_found", ElapsedMs: 100},
		{Time: at(24), Tool: "http", Status: "error", ErrorType: "not_found", ElapsedMs: 50},
	}
	for _, c := range calls {
		c.Node, c.Side = "n1", persistence.SideOrchestrator
		if err := s.RecordToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	llm := []persistence.LLMCall{
		{Time: at(2), ConversationID: "c1", Model: "m1", InputTokens: 10, OutputTokens: 1, LatencyMs: 7},
		{Time: at(4), ConversationID: "c1", Model: "m1", InputTokens: 20, OutputTokens: 2, LatencyMs: 8, Iteration: 1},
		{Time: day2, ConversationID: "c2", Model: "m2", InputTokens: 100, OutputTokens: 50, LatencyMs: 9},
	}
	for _, c := range llm {
		c.Node, c.Provider, c.Status = "n1", "p", "success"
		if err := s.RecordLLMCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	msgs := []persistence.Message{
		{Time: at(1), Role: "user", Body: []byte(`{"role":"user","content":"list files"}`)},
		{Time: at(5), Role: "assistant", Body: []byte(`{"role":"assistant","content":"done"}`)},
	}
	if err := s.AppendMessages(ctx, "c1", msgs); err != nil {
		t.Fatal(err)
	}
	sec := func(min, sec int) time.Time { return at(min).Add(time.Duration(sec) * time.Second) }
	events := []persistence.Event{
		{Time: sec(2, 10), Kind: "approval_requested", Detail: []byte(`{"approval":"apr-1","tool":"shell","conversation_id":"c1","request_id":"tool-1","reason":"rule 1"}`)},
		{Time: sec(2, 40), Kind: "approval_decided", Detail: []byte(`{"approval":"apr-1","tool":"shell","state":"approved","by":"alice","waited_ms":30000,"conversation_id":"c1","request_id":"tool-1"}`)},
		{Time: sec(4, 10), Kind: "session_spawned", Detail: []byte(`{"parent":"c1","child":"sub-1","depth":1}`)},
		{Time: sec(4, 20), Kind: "approval_requested", Detail: []byte(`{"approval":"apr-2","tool":"shell","conversation_id":"sub-1","request_id":"tool-2","reason":"rule 1"}`)},
		{Time: sec(4, 30), AgentID: "edge-1", Kind: persistence.EventAgentOnline},
	}
	for _, e := range events {
		e.Node = "n1"
		if err := s.RecordEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func runReport(t *testing.T, path, name string, args ...any) [][]string {
	t.Helper()
	r, ok := ReportByName(name)
	if !ok {
		t.Fatalf("no report %q", name)
	}
	res, err := QueryReadOnly(context.Background(), path, r.Query, args...)
	if err != nil {
		t.Fatalf("report %s: %v", name, err)
	}
	var out [][]string
	for _, row := range res.Rows {
		var cells []string
		for _, v := range row {
			cells = append(cells, fmt.Sprint(v))
		}
		out = append(out, cells)
	}
	return out
}

func TestReports(t *testing.T) {
	t.Parallel()
	path := reportData(t)
	tests := []struct {
		name string
		args []any
		cols []int // which columns to compare
		want [][]string
	}{
		{"tools", nil, []int{0, 1, 2, 3, 4, 5, 6}, [][]string{
			{"shell", "edge-1", "3", "1", "33.3", "20", "30"},
			{"http", "", "2", "2", "100", "75", "100"},
			{"read", "edge-2", "1", "0", "0", "5", "5"},
		}},
		{"errors", nil, []int{0, 1, 2, 3}, [][]string{
			{"not_found", "2", "33.3", "http"},
			{"timeout", "1", "16.7", "shell"},
		}},
		{"slowest", nil, []int{1, 3}, [][]string{{"http", "100"}, {"http", "50"}, {"shell", "30"}, {"shell", "20"}, {"shell", "10"}, {"read", "5"}}},
		{"tokens-by-conversation", nil, []int{0, 1, 2, 3, 4, 5}, [][]string{
			{"c2", "1", "100", "50", "150", "9"},
			{"c1", "2", "30", "3", "33", "15"},
		}},
		{"tokens-by-day", nil, []int{0, 2, 3, 4, 5}, [][]string{
			{"2026-03-01", "m1", "2", "30", "3"},
			{"2026-03-02", "m2", "1", "100", "50"},
		}},
		{"conversation", []any{"c1"}, []int{1, 2, 3}, [][]string{
			{"message", "user", "list files"},
			{"llm", "p/m1", "success 10+1 tokens 7ms"},
			{"event", "approval_requested", "shell tool-1: rule 1"},
			{"event", "approval_decided", "approved by alice after 30000ms: shell tool-1"},
			{"tool", "shell", "success 10ms agent=edge-1"},
			{"llm", "p/m1", "success 20+2 tokens 8ms"},
			{"event", "session_spawned", "spawned sub-1"},
			{"message", "assistant", "done"},
		}},
		{"conversation", []any{"sub-1"}, []int{1, 2, 3}, [][]string{
			{"event", "session_spawned", "spawned by c1"},
			{"event", "approval_requested", "shell tool-2: rule 1"},
		}},
	}
	for _, tt := range tests {
		got := runReport(t, path, tt.name, tt.args...)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d rows %v, want %d", tt.name, len(got), got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			for j, c := range tt.cols {
				if got[i][c] != w[j] {
					t.Errorf("%s row %d column %d: got %q, want %q (row %v)", tt.name, i, c, got[i][c], w[j], got[i])
				}
			}
		}
	}
}

// docs/AUDIT.md shows every report's SQL verbatim.
func TestReportsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/AUDIT.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Reports {
		if !strings.Contains(string(doc), r.Query) {
			t.Errorf("docs/AUDIT.md does not show the %q report's query verbatim", r.Name)
		}
		if r.Raw != "" && !strings.Contains(string(doc), r.Raw) {
			t.Errorf("docs/AUDIT.md does not show the %q report's query over the records verbatim", r.Name)
		}
	}
}

// The calls report names, for each tool call, the assistant message and
// the LLM turn that asked for it (the latest message holding its call id
// before its row, so a model reusing ids across turns still gets the right
// one) and its
// approval, joined by request_id. The records are written in the order a
// node writes them.
func TestCallsReport(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	ctx := context.Background()
	llm := func(iter int) {
		t.Helper()
		if err := s.RecordLLMCall(ctx, persistence.LLMCall{Node: "n1", ConversationID: "c", Provider: "p", Status: "success", Iteration: iter}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := func(bodies ...string) {
		t.Helper()
		var ms []persistence.Message
		for _, b := range bodies {
			var m struct{ Role string }
			if err := json.Unmarshal([]byte(b), &m); err != nil {
				t.Fatal(err)
			}
			ms = append(ms, persistence.Message{Role: m.Role, Body: []byte(b)})
		}
		if err := s.AppendMessages(ctx, "c", ms); err != nil {
			t.Fatal(err)
		}
	}
	call := func(callID, requestID, status, errType string) {
		t.Helper()
		if err := s.RecordToolCall(ctx, persistence.ToolCall{Node: "n1", Side: persistence.SideOrchestrator, ConversationID: "c",
			CallID: callID, RequestID: requestID, Tool: "bash", Params: []byte(`{}`), Status: status, ErrorType: errType}); err != nil {
			t.Fatal(err)
		}
	}
	event := func(kind, detail string) {
		t.Helper()
		if err := s.RecordEvent(ctx, persistence.Event{Node: "n1", Kind: kind, Detail: []byte(detail)}); err != nil {
			t.Fatal(err)
		}
	}
	llm(0)
	msgs(`{"role":"user","content":"go"}`, `{"role":"assistant","tool_calls":[{"id":"k1","name":"bash"},{"id":"k2","name":"bash"}]}`)
	event("approval_requested", `{"approval":"apr-1","conversation_id":"c","request_id":"tool-2"}`)
	event("approval_decided", `{"approval":"apr-1","conversation_id":"c","request_id":"tool-2","state":"denied","by":"bob"}`)
	call("k2", "tool-2", "error", "approval_denied")
	// k1 runs long while the node records other things: its row ends up
	// nearer the next turn's message, which reuses its id, than its own.
	for range 10 {
		event("agent_online", `{}`)
	}
	call("k1", "tool-1", "success", "")
	llm(1)
	msgs(`{"role":"tool","tool_call_id":"k1"}`, `{"role":"tool","tool_call_id":"k2"}`, `{"role":"assistant","content":"done"}`)
	llm(0)
	msgs(`{"role":"user","content":"again"}`, `{"role":"assistant","tool_calls":[{"id":"k1","name":"bash"}]}`)
	call("k1", "tool-3", "success", "")

	got := runReport(t, path, "calls", "c")
	// request_id, asked_in_message, llm_turn, approval
	want := [][]string{{"tool-2", "2", "0", "denied by bob"}, {"tool-1", "2", "0", ""}, {"tool-3", "7", "0", ""}}
	if len(got) != len(want) {
		t.Fatalf("%d rows %v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if g := got[i][9:]; fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("row %d: %v, want %v (row %v)", i, g, w, got[i])
		}
	}
}

// TestReportsSayWhoDecided: the calls and conversation reports name the
// person who decided an approval, and say what happened instead when the
// node decided it (a timeout, a restart, a chat that ended first): they
// read "canceled by canceled" and "timed_out by timeout".
func TestReportsSayWhoDecided(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	ctx := context.Background()
	tests := []struct{ state, by, want string }{
		{"denied", "bob", "denied by bob"},
		{"approved", "alice", "approved by alice"},
		{"timed_out", "timeout", "timed_out: nobody decided in time"},
		{"denied", "restart", "denied: the node restarted"},
		{"canceled", "canceled", "canceled: the chat ended first"},
	}
	for i, tt := range tests {
		req := fmt.Sprintf("tool-%d", i)
		detail := fmt.Sprintf(`{"conversation_id":"c","request_id":%q,"state":%q,"by":%q,"waited_ms":5,"tool":"bash"}`, req, tt.state, tt.by)
		if err := s.RecordEvent(ctx, persistence.Event{Node: "n1", Kind: "approval_decided", Detail: []byte(detail)}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordToolCall(ctx, persistence.ToolCall{Node: "n1", Side: persistence.SideOrchestrator, ConversationID: "c",
			CallID: fmt.Sprintf("k%d", i), RequestID: req, Tool: "bash", Params: []byte(`{}`), Status: "error", ErrorType: "approval_denied"}); err != nil {
			t.Fatal(err)
		}
	}
	calls := runReport(t, path, "calls", "c")
	var events []string
	for _, row := range runReport(t, path, "conversation", "c") {
		if row[1] == "event" {
			events = append(events, row[3])
		}
	}
	if len(calls) != len(tests) || len(events) != len(tests) {
		t.Fatalf("calls %v, events %v: want %d of each", calls, events, len(tests))
	}
	for i, tt := range tests {
		if got := calls[i][len(calls[i])-1]; got != tt.want {
			t.Errorf("calls report, %s by %s: %q, want %q", tt.state, tt.by, got, tt.want)
		}
		if want := fmt.Sprintf("%s after 5ms: bash tool-%d", tt.want, i); events[i] != want {
			t.Errorf("conversation report, %s by %s: %q, want %q", tt.state, tt.by, events[i], want)
		}
	}
}
