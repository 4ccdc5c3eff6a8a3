package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// BenchmarkTurn is the store's work for one audited round trip of a tool
// call, as the node and the agent do it (actors/ and orchestrator/history.go
// on one side, edge/tool.go on the other), each on a store of its own.
//
// orchestrator: a new conversation loads its (empty) history; the first
// completion's record is queued; the user's message and the assistant's
// tool call are appended, which commits the queued record with them
// (before the dispatch); the tool call's row and the second completion's
// record are queued; the tool result and the answer are appended (before
// the answer). Two waited commits.
//
// agent: the request log's entry before the run (BeginRun), then the
// audit row and the kept report in one transaction (FinishToolCall). Two
// waited commits.
//
// ns/op is per round trip.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	b.Run("orchestrator", func(b *testing.B) {
		s, _ := openStore(b, Options{})
		bodies := turnBodies()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			conv := fmt.Sprintf("conv-%d", i)
			if h, err := s.LoadMessages(ctx, conv); err != nil || len(h) != 0 {
				b.Fatalf("load history: %d messages, %v", len(h), err)
			}
			llm1 := turnLLMCall(conv, 0)
			if err := s.QueueLLMCall(llm1, nil); err != nil {
				b.Fatal(err)
			}
			appendTwo(b, s, conv, "user", bodies[0], "assistant", bodies[1])
			audit := make(chan error, 1)
			if err := s.QueueToolCall(turnToolCall(conv, persistence.SideOrchestrator), func(err error) { audit <- err }); err != nil {
				b.Fatal(err)
			}
			if err := s.QueueLLMCall(turnLLMCall(conv, 1), nil); err != nil {
				b.Fatal(err)
			}
			appendTwo(b, s, conv, "tool", bodies[2], "assistant", bodies[3])
			if err := <-audit; err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("agent", func(b *testing.B) {
		s, _ := openStore(b, Options{})
		report := []byte(`{"request_id":"r","report_type":"tool_result","status":"success","result":{"content":[{"type":"text","text":"[]"}]},"elapsed_ms":0}`)
		params := json.RawMessage(`{}`)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			conv, req := fmt.Sprintf("conv-%d", i), fmt.Sprintf("req-%d", i)
			st, _, err := s.BeginRun(ctx, req, persistence.Run{Tool: "todoread", Params: params, ConversationID: conv})
			if err != nil || st != persistence.RequestNew {
				b.Fatalf("begin run: %v, %v", st, err)
			}
			rec := turnToolCall(conv, persistence.SideEdge)
			rec.RequestID = req
			if err := s.FinishToolCall(ctx, rec, req, report); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// appendTwo appends a history write of two messages to conv.
func appendTwo(b *testing.B, s *Store, conv, role1 string, body1 []byte, role2 string, body2 []byte) {
	msgs := []persistence.Message{{Role: role1, Body: body1}, {Role: role2, Body: body2}}
	if err := s.AppendMessages(context.Background(), conv, msgs); err != nil {
		b.Fatal(err)
	}
}

// turnBodies are the JSON of a round trip's four messages, as
// orchestrator/history.go encodes them.
func turnBodies() [4][]byte {
	return [4][]byte{
		[]byte(`{"role":"user","content":"call todoread once, then answer done"}`),
		[]byte(`{"role":"assistant","tool_calls":[{"id":"call_1","name":"todoread","arguments":{}}]}`),
		[]byte(`{"role":"tool","content":"[]","tool_call_id":"call_1","name":"todoread"}`),
		[]byte(`{"role":"assistant","content":"done"}`),
	}
}

// turnLLMCall is the record of a conversation's completion, as
// actors/llmcall.go makes it.
func turnLLMCall(conv string, iteration int) persistence.LLMCall {
	return persistence.LLMCall{Time: time.Now().UTC(), Node: "orch-1", ConversationID: conv, Provider: "scripted",
		Model: "m1", InputTokens: 120, OutputTokens: 12, LatencyMs: 0, Status: persistence.StatusSuccess, Iteration: iteration}
}

// turnToolCall is a built-in tool's audit row on side, as actors.AuditRow
// makes it.
func turnToolCall(conv, side string) persistence.ToolCall {
	elapsed := int64(0)
	c := persistence.ToolCall{Time: time.Now().UTC(), Node: "edge-1", Side: side, ConversationID: conv,
		RequestID: "req", CallID: "call_1", AgentID: "edge-1", Tool: "todoread", Params: json.RawMessage(`{}`),
		Status: persistence.StatusSuccess, ResultExcerpt: "[]", ResultBytes: 2}
	if side == persistence.SideOrchestrator {
		c.Node, c.AgentElapsedMs = "orch-1", &elapsed
	} else {
		c.CallID = ""
	}
	return c
}
