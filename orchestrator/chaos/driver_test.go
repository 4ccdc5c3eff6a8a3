package chaos

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

func TestDriver(t *testing.T) {
	d := driver{}
	o, _ := json.Marshal(order{Agent: "pi-1", Tag: "call-0007", File: "/tmp/runs", Seconds: 0.5})
	res, err := d.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: string(o)}}})
	if err != nil {
		t.Fatal(err)
	}
	calls := res.Message.ToolCalls
	if len(calls) != 1 || calls[0].Name != "pi-1__mark" {
		t.Fatalf("tool calls %+v", calls)
	}
	var args map[string]any
	if err := json.Unmarshal(calls[0].Arguments, &args); err != nil {
		t.Fatal(err)
	}
	if args["tag"] != "call-0007" || args["file"] != "/tmp/runs" || args["seconds"] != 0.5 {
		t.Fatalf("arguments %v", args)
	}
	tool := llm.Message{Role: llm.RoleTool, Content: "Error (agent_offline) from tool"}
	res, err = d.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: string(o)}, res.Message, tool}})
	if want := tool.Content + " [history 1]"; err != nil || res.Message.Content != want || len(res.Message.ToolCalls) != 0 {
		t.Fatalf("answer %+v, %v; want %q: the tool message verbatim and the user messages seen", res.Message, err, want)
	}
	for _, bad := range [][]llm.Message{nil, {{Role: llm.RoleUser, Content: "not an order"}}} {
		if _, err := d.Complete(context.Background(), llm.Request{Messages: bad}); err == nil {
			t.Fatalf("no error for %+v", bad)
		}
	}
}

func TestErrorTypeOfAnswers(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`Error (agent_offline) from tool "a__mark": edge agent "a" is offline`, "agent_offline"},
		{`Error (timeout) from tool "a__mark": timed out`, "timeout"},
		{`Error (interrupted) from tool`, "interrupted"},
		{`something went wrong`, ""},
		{`marked call-0001`, ""},
	} {
		got := ""
		if m := errorType().FindStringSubmatch(tc.text); m != nil {
			got = m[1]
		}
		if got != tc.want {
			t.Errorf("%q: type %q, want %q", tc.text, got, tc.want)
		}
	}
}
