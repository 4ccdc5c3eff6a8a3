package actors

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
)

// progressLog collects a chat's Progress events.
type progressLog = testenv.Recorded[Progress]

func TestProgressEventsOfAChat(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	h.edge.onTool = echoReply(h)
	var log progressLog
	if ans := h.ask(t, &Chat{ConversationID: "p", Text: "go", Progress: log.Add}); ans.Err != nil || ans.Text != "tool said: echo:hi" {
		t.Fatalf("answer %+v", ans)
	}
	evs := log.All()
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
		if e.ConversationID != "p" || e.Time.IsZero() {
			t.Errorf("event %+v: conversation or time missing", e)
		}
	}
	want := []string{ProgressLLMStart, ProgressLLMEnd, ProgressToolStart, ProgressToolEnd, ProgressLLMStart, ProgressLLMEnd}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	start, end := evs[2], evs[3]
	if start.Agent != "pi-1" || start.Tool != "echo" || start.CallID != "c1" || !strings.Contains(start.Args, `"hi"`) || start.RequestID == "" {
		t.Fatalf("tool_start %+v", start)
	}
	if end.Status != "success" || end.Result != "echo:hi" || end.RequestID != start.RequestID || end.Agent != "pi-1" {
		t.Fatalf("tool_end %+v", end)
	}
	if evs[1].Status != "success" || evs[4].Iteration != 1 {
		t.Fatalf("llm events %+v %+v", evs[1], evs[4])
	}
}

func TestProgressArgsAreCut(t *testing.T) {
	long := strings.Repeat("x", 5000)
	h := newHarness(t, transcript(callTurn("c1", "pi-1__echo", `{"text":"`+long+`"}`), `{"content":"ok"}`), nil)
	h.edge.onTool = echoReply(h)
	var log progressLog
	h.ask(t, &Chat{ConversationID: "p", Text: "go", Progress: log.Add})
	for _, e := range log.All() {
		if len(e.Args) > MaxProgressArgs+len("…") || len(e.Result) > ProgressResultExcerpt+len("…") {
			t.Fatalf("%s: args %d bytes, result %d bytes", e.Kind, len(e.Args), len(e.Result))
		}
	}
}

// failingAudit refuses every record, as a full disk would.
type failingAudit struct{}

func (failingAudit) RecordToolCall(context.Context, persistence.ToolCall) error {
	return errors.New("database or disk is full")
}

// queuedFailingAudit queues every row and fails its commit afterwards, as
// a disk that fills up under the writer would.
type queuedFailingAudit struct {
	failingAudit
	queued atomic.Int32
}

func (a *queuedFailingAudit) QueueToolCall(_ persistence.ToolCall, then func(error)) error {
	a.queued.Add(1)
	then(errors.New("database or disk is full")) // buffered: the caller reads it later
	return nil
}

// An audit row that fails, written at once or queued (ToolCallQueue) and
// failing at its commit, ends the chat with ErrAudit and no answer text: a
// queued row is checked before the next dispatch and before the answer.
func TestAuditFailureEndsTheChat(t *testing.T) {
	queued := &queuedFailingAudit{}
	tests := []struct {
		name  string
		audit AuditLog
		check func(t *testing.T)
	}{
		{"written", failingAudit{}, func(*testing.T) {}},
		{"queued", queued, func(t *testing.T) {
			if queued.queued.Load() != 1 {
				t.Fatalf("rows queued %d, want 1", queued.queued.Load())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.Audit = tt.audit })
			h.edge.onTool = echoReply(h)
			ans := h.chat(t, "go")
			if !errors.Is(ans.Err, ErrAudit) || ans.Text != "" {
				t.Fatalf("answer %+v, want ErrAudit and no text", ans)
			}
			if !strings.Contains(ans.Err.Error(), "disk is full") {
				t.Fatalf("err %v does not say why", ans.Err)
			}
			tt.check(t)
		})
	}
}

// recordingProvider answers every request with text and keeps the requests.
type recordingProvider struct{ testenv.Recorded[llm.Request] }

func (p *recordingProvider) Name() string { return "recording" }

func (p *recordingProvider) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	p.Add(req)
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "answer"}}, nil
}

func (p *recordingProvider) last() llm.Request {
	reqs := p.All()
	return reqs[len(reqs)-1]
}

func TestSeededChat(t *testing.T) {
	prov := &recordingProvider{}
	h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.Provider = prov })
	seed := []llm.Message{{Role: llm.RoleUser, Content: "earlier question"}, {Role: llm.RoleAssistant, Content: "earlier answer"}}
	ask := func(conv string, seed []llm.Message) *Answer {
		t.Helper()
		return h.ask(t, &Chat{ConversationID: conv, Text: "now", Seed: seed})
	}
	if ans := ask("s1", seed); ans.Err != nil || ans.Text != "answer" {
		t.Fatalf("seeded chat %+v", ans)
	}
	var got []string
	for _, m := range prov.last().Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	if want := "user:earlier question assistant:earlier answer user:now"; strings.Join(got, " ") != want {
		t.Fatalf("model saw %q, want %q", strings.Join(got, " "), want)
	}
	// s1 has history now: a second seed would fork it.
	if ans := ask("s1", seed); !errors.Is(ans.Err, ErrSeeded) {
		t.Fatalf("second seed: %+v, want ErrSeeded", ans)
	}
	// and the conversation still answers a plain chat afterwards
	if ans := ask("s1", nil); ans.Err != nil {
		t.Fatalf("chat after a refused seed: %v", ans.Err)
	}
}
