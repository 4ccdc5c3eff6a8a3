package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestMetricsCountInventedNamesTogether: the calls of names the turn did
// not offer share one counter however many names a model invents; a
// tool it offered is counted under its name, a call refused for its
// arguments included. Each invented name was a counter (and four
// Prometheus series, and a /v1/status entry) of its own before.
func TestMetricsCountInventedNamesTogether(t *testing.T) {
	tr := transcript(`{"content":"","tool_calls":[
		{"id":"a","name":"made_up_1","arguments":{}},
		{"id":"b","name":"pi-1__echo","arguments":{"text":"B"}},
		{"id":"c","name":"made_up_2","arguments":{}},
		{"id":"d","name":"pi-1__nope","arguments":{}},
		{"id":"e","name":"pi-1__echo","arguments":{"n":1}}]}`,
		`{"content":"done"}`)
	m := &Metrics{}
	h := newHarnessTools(t, tr, schemaTools, func(o *ConvOptions) { o.Metrics = m })
	h.edge.onTool = echoReply(h)
	if ans := h.chat(t, "go"); ans.Err != nil {
		t.Fatalf("answer %+v", ans)
	}
	s := m.Snapshot()
	want := map[string]ToolStats{
		NotOfferedTool: {Calls: 3, Errors: 3},
		"pi-1__echo":   {Calls: 2, Errors: 1},
	}
	if len(s.Tools) != len(want) {
		t.Fatalf("counters for %v, want %v", s.ToolNames(), want)
	}
	for name, w := range want {
		got := s.Tools[name]
		if got.Calls != w.Calls || got.Errors != w.Errors {
			t.Errorf("%s: %d calls %d errors, want %d and %d", name, got.Calls, got.Errors, w.Calls, w.Errors)
		}
	}
	if s.Calls != 5 || s.Errors != 4 {
		t.Fatalf("totals: %d calls %d errors, want 5 and 4", s.Calls, s.Errors)
	}
}

// TestMetricsNamesBounded: past MaxToolNames names, offered tools share
// OtherTools; a name counted before keeps its counter, and a repeated
// call that never resolved is counted under a name it repeats.
func TestMetricsNamesBounded(t *testing.T) {
	m := &Metrics{}
	for i := range MaxToolNames + 10 {
		m.call(fmt.Sprintf("agent__tool%d", i), true, wire.StatusSuccess, "", time.Millisecond)
	}
	m.call("agent__tool0", true, wire.StatusSuccess, "", time.Millisecond)
	m.call("agent__tool1", false, wire.StatusError, wire.ErrInvalidParams, time.Millisecond)
	m.call("invented", false, wire.StatusError, wire.ErrNotFound, time.Millisecond)
	s := m.Snapshot()
	for _, tc := range []struct {
		name          string
		calls, errors int64
	}{
		{"agent__tool0", 2, 0},
		{"agent__tool1", 2, 1},
		{fmt.Sprintf("agent__tool%d", MaxToolNames-1), 1, 0},
		{OtherTools, 10, 0},
		{NotOfferedTool, 1, 1},
	} {
		if got := s.Tools[tc.name]; got.Calls != tc.calls || got.Errors != tc.errors {
			t.Errorf("%s: %+v, want %d calls %d errors", tc.name, got, tc.calls, tc.errors)
		}
	}
	if n := len(s.Tools); n > MaxToolNames+2 {
		t.Fatalf("%d names kept, want at most %d and the two shared ones", n, MaxToolNames)
	}
	if _, ok := s.Tools[fmt.Sprintf("agent__tool%d", MaxToolNames)]; ok {
		t.Fatal("a name past the bound has a counter of its own")
	}
}
