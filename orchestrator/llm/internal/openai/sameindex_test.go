package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// TestParallelCallsUnderOneIndex: streamed parallel calls that all carry
// index 0 but their own ids (Ollama behind LiteLLM, Dynamo) stay separate
// calls; a server that repeats one call's id, or sends a new id before
// the call's arguments are complete, still makes one call. Before, the
// calls of one index were merged into one whose arguments ran together
// ({"path":"a"}{"path":"b"}), refused as invalid, and the others were lost.
func TestParallelCallsUnderOneIndex(t *testing.T) {
	delta := func(id, name, args string) json.RawMessage {
		idField := ""
		if id != "" {
			idField = `"id":"` + id + `","type":"function",`
		}
		a, _ := json.Marshal(args)
		return json.RawMessage(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,` + idField + `"function":{"name":"` + name + `","arguments":` + string(a) + `}}]}}]}`)
	}
	end := []json.RawMessage{json.RawMessage(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), json.RawMessage(`"[DONE]"`)}
	for _, c := range []struct {
		name   string
		deltas []json.RawMessage
		want   []string // id=arguments of each call
	}{
		{"two calls, one index", []json.RawMessage{
			delta("call_a", "pi-1__read_file", `{"path":`), delta("", "", `"/etc/hostname"}`),
			delta("call_b", "pi-1__read_file", `{"path":"/proc/loadavg"}`),
		}, []string{`call_a={"path":"/etc/hostname"}`, `call_b={"path":"/proc/loadavg"}`}},
		{"the id repeated on every delta", []json.RawMessage{
			delta("call_a", "pi-1__read_file", `{"path":`), delta("call_a", "", `"/etc/hostname"}`),
		}, []string{`call_a={"path":"/etc/hostname"}`}},
		{"a new id in the middle of the arguments", []json.RawMessage{
			delta("call_a", "pi-1__read_file", `{"path":`), delta("call_x", "", `"/etc/hostname"}`),
		}, []string{`call_a={"path":"/etc/hostname"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := llmtest.Serve(t, llmtest.Pair{Stream: append(c.deltas, end...)})
			r, err := New(Options{BaseURL: s.URL + "/v1", Stream: true}).Complete(context.Background(), turn1())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tc := range r.Message.ToolCalls {
				got = append(got, tc.ID+"="+string(tc.Arguments))
			}
			if len(got) != len(c.want) {
				t.Fatalf("calls %q, want %q", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("calls %q, want %q", got, c.want)
				}
			}
		})
	}
}
