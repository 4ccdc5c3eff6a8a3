package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// step is one input to the machine and the effects it must answer with,
// each written as effectString writes it.
type step struct {
	in   func(m *Machine) []Effect
	want []string
}

// answer is the model answering with text and calls written "name args".
func answer(text string, calls ...string) func(m *Machine) []Effect {
	return func(m *Machine) []Effect {
		msg := llm.Message{Role: llm.RoleAssistant, Content: text}
		for i, c := range calls {
			name, args, _ := strings.Cut(c, " ")
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("c%d", i), Name: name, Arguments: json.RawMessage(args)})
		}
		return m.ModelAnswered(msg)
	}
}

func ended(i int, ok bool) func(m *Machine) []Effect {
	return func(m *Machine) []Effect {
		return m.CallEnded(i, CallResult{Message: llm.Message{Role: llm.RoleTool, Content: fmt.Sprintf("r%d", i)}, Failed: !ok,
			Summary: CallSummary{Tool: fmt.Sprint(i), Success: ok}, Elapsed: time.Duration(i+1) * time.Millisecond})
	}
}

func auditFailed(i int) func(m *Machine) []Effect {
	return func(m *Machine) []Effect {
		return m.CallEnded(i, CallResult{Message: llm.Message{Role: llm.RoleTool, Content: "r"}, AuditErr: errors.New("disk full")})
	}
}

var errModel = errors.New("model down")

func effectString(e Effect) string {
	switch e := e.(type) {
	case AskModel:
		if e.Tools {
			return "ask"
		}
		return "ask-final: " + e.Limit.Error()
	case RunCall:
		if e.Refusal != "" {
			return fmt.Sprintf("run %d refused", e.Index)
		}
		return fmt.Sprintf("run %d", e.Index)
	case Record:
		var roles []string
		for _, m := range e.Messages {
			roles = append(roles, m.Role+":"+m.Content)
		}
		return "record " + strings.Join(roles, ",")
	case BatchEnded:
		return fmt.Sprintf("batch calls=%d peak=%d", e.Calls, e.Peak)
	case Finish:
		s := "finish"
		if e.Text != "" {
			s += " text=" + e.Text
		}
		if e.Err != nil {
			s += " err=" + e.Err.Error()
		}
		if e.Limit != nil {
			s += " limit"
		}
		return s
	}
	return fmt.Sprintf("%T", e)
}

func TestMachine(t *testing.T) {
	rules := Rules{MaxIterations: 2, ToolErrorLimit: 2, MaxIdenticalCalls: 1, MaxParallel: 2, OnLimit: OnLimitAnswer}
	strict := rules
	strict.OnLimit = OnLimitError
	loose := rules
	loose.MaxIterations = 5
	maxErr := fmt.Sprintf("%v (2)", ErrMaxIterations)
	errLimit := fmt.Sprintf("%v (2)", ErrToolErrorLimit)
	// sized passes MaxChatBytes with the first result of its first turn
	// (of calls a and b), sizedStrict with its first message, roomy not.
	twoCalls := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: "c0", Name: "a", Arguments: json.RawMessage("{}")}, {ID: "c1", Name: "b", Arguments: json.RawMessage("{}")}}}
	sized, sizedStrict, roomy := loose, strict, loose
	sized.MaxChatBytes, sizedStrict.MaxChatBytes, roomy.MaxChatBytes = twoCalls.Size()+1, 1, 1<<20
	sizeErr := fmt.Sprintf("%v (%d bytes)", ErrChatTooLarge, sized.MaxChatBytes)
	strictErr := fmt.Sprintf("%v (1 bytes)", ErrChatTooLarge)
	leftOut := leftOut(llm.Message{}, sized.MaxChatBytes).Content
	tests := []struct {
		name  string
		rules Rules
		steps []step
	}{
		{"a chat past its size leaves later results out and ends tool use after the turn", sized, []step{
			{answer("", "a", "b"), []string{"run 0", "run 1"}},
			{ended(0, true), nil},
			{ended(1, true), []string{"batch calls=2 peak=2", "record assistant:,tool:r0,tool:" + leftOut, "ask-final: " + sizeErr}},
			{answer("from what I have", "a {\"n\":2}"), []string{"record assistant:from what I have", "finish text=from what I have limit"}},
		}},
		{"a chat past its size under on_limit error", sizedStrict, []step{
			{answer("", "a"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:" + strings.Replace(leftOut, fmt.Sprint(sized.MaxChatBytes), "1", 1),
				"finish err=" + strictErr}},
		}},
		{"a chat within its size goes on", roomy, []step{
			{answer("", "a"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
		}},
		{"answer without tools", rules, []step{
			{answer("hi"), []string{"record assistant:hi", "finish text=hi"}},
		}},
		{"one call then answer", rules, []step{
			{answer("", "a"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("done"), []string{"record assistant:done", "finish text=done"}},
		}},
		{"parallel bounded, results kept in call order", rules, []step{
			{answer("", "a", "b", "c"), []string{"run 0", "run 1"}},
			{ended(1, true), []string{"run 2"}},
			{ended(2, true), nil},
			{ended(0, true), []string{"batch calls=3 peak=2", "record assistant:,tool:r0,tool:r1,tool:r2", "ask"}},
		}},
		{"stale and duplicate results are ignored", rules, []step{
			{answer("", "a", "b", "c"), []string{"run 0", "run 1"}},
			{ended(2, true), nil}, // not started yet
			{ended(0, true), []string{"run 2"}},
			{ended(0, true), nil}, // twice
			{ended(7, true), nil},
			{ended(-1, true), nil},
		}},
		{"max iterations asks for a final answer without tools", rules, []step{
			{answer("", "a {\"n\":1}"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":2}"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":3}"), []string{"ask-final: " + maxErr}},
			{answer("best I can", "a {\"n\":4}"), []string{"record assistant:best I can", "finish text=best I can limit"}},
		}},
		{"a blank final answer after a limit is the limit's error", rules, []step{
			{answer("", "a {\"n\":1}"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":2}"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":3}"), []string{"ask-final: " + maxErr}},
			{answer("  "), []string{"finish err=" + maxErr + " limit"}},
		}},
		{"max iterations under on_limit error", strict, []step{
			{answer("", "a {\"n\":1}"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":2}"), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":3}"), []string{"finish err=" + maxErr}},
		}},
		{"identical call refused, then the loop ends on the next repeat", loose, []step{
			{answer("", `a {"x":1,"y":2}`), []string{"run 0"}},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			// the same object in another key order and spacing
			{answer("", `a { "y": 2, "x": 1 }`, `b`), []string{"run 0 refused", "run 1"}},
			{ended(0, false), nil},
			{ended(1, true), []string{"batch calls=2 peak=2", "record assistant:,tool:r0,tool:r1", "ask"}},
			{answer("", `a {"x":1,"y":2}`), []string{"run 0 refused"}},
			{ended(0, false), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask-final: " + ErrRepeatedToolCall.Error()}},
		}},
		{"identical calls within one turn", Rules{MaxIterations: 5, ToolErrorLimit: 5, MaxIdenticalCalls: 1, MaxParallel: 5}, []step{
			{answer("", "a", "a", "a"), []string{"run 0", "run 1 refused", "run 2 refused"}},
			{ended(0, true), nil},
			{ended(1, false), nil},
			{ended(2, false), []string{"batch calls=3 peak=3", "record assistant:,tool:r0,tool:r1,tool:r2",
				"ask-final: " + ErrRepeatedToolCall.Error()}},
		}},
		{"failing turns end tool use; a success resets the count", rules, []step{
			{answer("", "a {\"n\":1}"), []string{"run 0"}},
			{ended(0, false), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":2}", "b"), []string{"run 0", "run 1"}},
			{ended(0, false), nil},
			{ended(1, true), []string{"batch calls=2 peak=2", "record assistant:,tool:r0,tool:r1", "ask"}},
			{answer("", "c"), []string{"ask-final: " + maxErr}},
		}},
		{"consecutive failing turns", Rules{MaxIterations: 9, ToolErrorLimit: 2, MaxIdenticalCalls: 1, MaxParallel: 1}, []step{
			{answer("", "a {\"n\":1}"), []string{"run 0"}},
			{ended(0, false), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
			{answer("", "a {\"n\":2}"), []string{"run 0"}},
			{ended(0, false), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask-final: " + errLimit}},
		}},
		{"an audit failure ends the chat after the turn", rules, []step{
			{answer("", "a", "b"), []string{"run 0", "run 1"}},
			{auditFailed(0), nil},
			{ended(1, true), []string{"batch calls=2 peak=2", "record assistant:,tool:r,tool:r1",
				"finish err=" + ErrAudit.Error() + ": disk full"}},
		}},
		{"model failure", rules, []step{
			{func(m *Machine) []Effect { return m.ModelFailed(errModel) }, []string{"finish err=model down"}},
			{answer("late"), nil},
		}},
		{"cancel ends the chat and drops what comes after", rules, []step{
			{answer("", "a"), []string{"run 0"}},
			{func(m *Machine) []Effect { return m.Cancel() }, []string{"finish err=" + ErrCanceled.Error()}},
			{ended(0, true), nil},
			{func(m *Machine) []Effect { return m.Cancel() }, nil},
		}},
		{"a completion that fails after a cancel ends nothing more", rules, []step{
			{func(m *Machine) []Effect { return m.Cancel() }, []string{"finish err=" + ErrCanceled.Error()}},
			{func(m *Machine) []Effect { return m.ModelFailed(errModel) }, nil},
		}},
		{"an answer while calls run is ignored", rules, []step{
			{answer("", "a"), []string{"run 0"}},
			{answer("stray"), nil},
			{ended(0, true), []string{"batch calls=1 peak=1", "record assistant:,tool:r0", "ask"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.rules)
			if got := m.Start(); len(got) != 1 || effectString(got[0]) != "ask" {
				t.Fatalf("start: %v", got)
			}
			for i, s := range tt.steps {
				var got []string
				for _, e := range s.in(m) {
					got = append(got, effectString(e))
				}
				if strings.Join(got, " | ") != strings.Join(s.want, " | ") {
					t.Fatalf("step %d:\n got  %q\n want %q", i, got, s.want)
				}
			}
		})
	}
}

func TestMachineCounters(t *testing.T) {
	m := New(Rules{MaxIterations: 5, ToolErrorLimit: 5, MaxIdenticalCalls: 1, MaxParallel: 5})
	m.Start()
	answer("", "a {\"n\":1}", "b")(m)
	ended(1, false)(m)
	ended(0, true)(m)
	answer("", "c")(m)
	ended(0, true)(m)
	if m.Iterations() != 2 || m.ToolCalls() != 3 {
		t.Fatalf("iterations %d tool calls %d, want 2 and 3", m.Iterations(), m.ToolCalls())
	}
	var tools []string
	for _, c := range m.Calls() {
		tools = append(tools, fmt.Sprintf("%s:%v", c.Tool, c.Success))
	}
	// in call order within each turn, although call 1 ended first
	if got := strings.Join(tools, " "); got != "0:true 1:false 0:true" {
		t.Fatalf("calls %s", got)
	}
}

func TestSignature(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"x":1,"y":[1,2]}`, `{ "y": [1, 2], "x": 1 }`, true},
		{`{"x":1}`, `{"x":2}`, false},
		{`{"x":1}`, `{"x":"1"}`, false},
		{`not json`, `not json`, true},
		{`not json`, `not  json`, false},
	}
	for _, tt := range tests {
		if got := Signature("t", json.RawMessage(tt.a)) == Signature("t", json.RawMessage(tt.b)); got != tt.same {
			t.Errorf("%s vs %s: same %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
	if Signature("a", json.RawMessage(`{}`)) == Signature("b", json.RawMessage(`{}`)) {
		t.Error("different tools share a signature")
	}
}
