package actors

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/skills"
)

const probeTranscript = `{"name":"probe","turns":[
  {"content":"","tool_calls":[{"id":"a","name":"probe","arguments":{}}]},
  {"content":"done: {{result a}}"}]}`

// TestCallerAndState: a local tool sees the chat it runs for, and the
// conversation's state says running while it runs, idle after.
func TestCallerAndState(t *testing.T) {
	callers := make(chan Caller, 1)
	release := make(chan struct{})
	h := newHarness(t, probeTranscript, func(o *ConvOptions) {
		o.Toolbox = &LocalTools{
			List: func() []skills.ToolDef {
				return []skills.ToolDef{{Name: "probe", Parameters: map[string]any{"type": "object"}}}
			},
			Run: func(ctx context.Context, _ string, _ json.RawMessage, _ int64) skills.Output {
				c, _ := CallerFrom(ctx)
				callers <- c
				<-release
				return skills.Output{Content: []skills.Block{skills.TextBlock("ok")}}
			}}
	})
	state := func(id string) *SessionState {
		t.Helper()
		res, err := Ask(h.sys.Root, h.convs.PID, &StateQuery{ConversationID: id}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return res.(*SessionState)
	}
	if s := state("c"); s.Loaded || s.Running || s.Queued != 0 {
		t.Fatalf("state before any chat %+v", s)
	}
	answers := make(chan *Answer, 1)
	go func() {
		res, err := Ask(h.sys.Root, h.convs.PID, &Chat{ConversationID: "c", Text: "go", Person: true, Parent: "p", Depth: 1}, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		a, _ := res.(*Answer)
		answers <- a
	}()
	var c Caller
	select {
	case c = <-callers:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool never ran")
	}
	if c.ConversationID != "c" || !c.Person || c.Parent != "p" || c.Depth != 1 || c.Toolbox == nil {
		t.Fatalf("caller %+v", c)
	}
	if s := state("c"); !s.Loaded || !s.Running {
		t.Fatalf("state while the tool runs %+v", s)
	}
	close(release)
	if a := <-answers; a == nil || a.Text != "done: ok" {
		t.Fatalf("answer %+v", a)
	}
	if s := state("c"); !s.Loaded || s.Running {
		t.Fatalf("state after the chat %+v", s)
	}
}

// TestChatBudget: a chat's MaxIterations lowers the loop's limit.
func TestChatBudget(t *testing.T) {
	for _, tc := range []struct {
		budget, want int
	}{{0, 10}, {3, 3}, {50, 10}} {
		o := ConvOptions{}
		o.fill()
		if got := o.rules(tc.budget).MaxIterations; got != tc.want {
			t.Errorf("budget %d: max iterations %d, want %d", tc.budget, got, tc.want)
		}
	}
}
