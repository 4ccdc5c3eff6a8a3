package actors

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// longNameProvider calls one tool whose name and id are 1 MB, then
// answers.
type longNameProvider struct {
	mu   sync.Mutex // guards seen
	seen []llm.Message
}

func (p *longNameProvider) Name() string { return "long" }

func (p *longNameProvider) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = req.Messages
	if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "done"}}, nil
	}
	return llm.Response{Model: strings.Repeat("m", 1<<20), Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: strings.Repeat("i", 1<<20), Name: strings.Repeat("n", 1<<20), Arguments: []byte(`{}`)}}}}, nil
}

// TestLongCallNamesAreCut: a tool call whose name and id are 1 MB is
// answered not_found, and the history, the audit row and the answer keep
// a few hundred bytes of each, not the megabyte (four times, before); so
// does the LLM call's row of a model name of 1 MB.
func TestLongCallNamesAreCut(t *testing.T) {
	p := &longNameProvider{}
	calls := &recordingLLMLog{}
	h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.Provider, o.LLMLog = p, calls })
	ans := h.chat(t, "go")
	if ans.Err != nil || ans.Text != "done" || len(ans.Calls) != 1 || ans.Calls[0].Success {
		t.Fatalf("answer %+v, want one failed call, then done", ans.Err)
	}
	rows := h.audit.All()
	if len(rows) != 1 || rows[0].ErrorType != "not_found" {
		t.Fatalf("audit rows %d, want the call's, not_found", len(rows))
	}
	if r := rows[0]; len(r.Tool)+len(r.CallID)+len(r.Error) > 4*MaxCallFieldBytes {
		t.Fatalf("audit row keeps %d + %d + %d bytes of name, id and error", len(r.Tool), len(r.CallID), len(r.Error))
	}
	for _, c := range calls.All() {
		if len(c.Model) > MaxCallFieldBytes {
			t.Fatalf("an llm_calls row keeps %d bytes of model name", len(c.Model))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := historyBytes(p.seen); n > 16<<10 {
		t.Fatalf("the model was sent %d bytes of history", n)
	}
	if !strings.Contains(p.seen[len(p.seen)-1].Content, "1048576 bytes") {
		t.Fatalf("the tool message does not say the name was cut: %.200q", p.seen[len(p.seen)-1].Content)
	}
}
