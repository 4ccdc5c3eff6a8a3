package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// TestArgumentsEncodedTwice: a tool call whose arguments are a JSON
// string holding the JSON text of the object (encoded twice, as small
// local models write them) reaches the loop as that object, whole and
// streamed. Before, they arrived as a JSON string, which the loop answers
// with invalid_params, and a model that repeats itself then ends the chat
// on the guard against identical calls.
func TestArgumentsEncodedTwice(t *testing.T) {
	twice, _ := json.Marshal(`{"path": "/proc/loadavg"}`) // the JSON text as a JSON string
	wire, _ := json.Marshal(string(twice))                // and that as the wire's arguments string
	first, _ := json.Marshal(string(twice[:len(twice)/2]))
	rest, _ := json.Marshal(string(twice[len(twice)/2:]))
	for _, stream := range []bool{false, true} {
		pair := llmtest.Pair{Response: json.RawMessage(`{"id":"r","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"pi-1__read_file","arguments":` + string(wire) + `}}]},"finish_reason":"tool_calls"}]}`)}
		if stream {
			pair = llmtest.Pair{Stream: []json.RawMessage{
				json.RawMessage(`{"id":"r","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"pi-1__read_file","arguments":` + string(first) + `}}]}}]}`),
				json.RawMessage(`{"id":"r","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + string(rest) + `}}]}}]}`),
				json.RawMessage(`{"id":"r","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
				json.RawMessage(`"[DONE]"`),
			}}
		}
		s := llmtest.Serve(t, pair)
		r, err := New(Options{BaseURL: s.URL + "/v1", Stream: stream}).Complete(context.Background(), turn1())
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		calls := r.Message.ToolCalls
		if len(calls) != 1 || string(calls[0].Arguments) != `{"path":"/proc/loadavg"}` || calls[0].ArgumentsError != "" {
			t.Fatalf("stream %v: calls = %+v, want the object", stream, calls)
		}
	}
}
