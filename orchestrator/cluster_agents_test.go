//go:build !nocluster

package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

func TestDecodeCallEnvelope(t *testing.T) {
	dispatch := `{"op":"dispatch","agent":"pi1","req":"tool-n1.1-1","deadline_ms":1700000000000,"reply_addr":"h:1",` +
		`"command":{"command":"tool","request_id":"tool-n1.1-1","payload":{}}}`
	for _, tc := range []struct {
		name, in, err string // err "" means valid
	}{
		{"dispatch", dispatch, ""},
		{"dispatch without reply", strings.Replace(dispatch, `"reply_addr":"h:1",`, "", 1), "reply address"},
		{"dispatch without deadline", strings.Replace(dispatch, `"deadline_ms":1700000000000,`, "", 1), "deadline"},
		{"dispatch of another request", strings.Replace(dispatch, `"request_id":"tool-n1.1-1"`, `"request_id":"other"`, 1), "command"},
		{"dispatch without command", `{"op":"dispatch","agent":"pi1","req":"r","deadline_ms":1,"reply_addr":"h:1"}`, "command"},
		{"cancel", `{"op":"cancel_call","agent":"pi1","req":"r"}`, ""},
		{"reply", `{"op":"reply","agent":"pi1","req":"r","report":{"agent_id":"pi1","report_type":"result","payload":{}}}`, ""},
		{"reply without report", `{"op":"reply","agent":"pi1","req":"r"}`, "without its report"},
		{"failed", `{"op":"failed","agent":"pi1","req":"r","failed":{"type":"busy","err":"full"}}`, ""},
		{"failed without failure", `{"op":"failed","agent":"pi1","req":"r"}`, "without its failure"},
		{"output", `{"op":"output","agent":"pi1","req":"r","seq":3,"output":"line"}`, ""},
		{"bad agent", `{"op":"cancel_call","agent":"a/b","req":"r"}`, "cluster call message"},
		{"no agent", `{"op":"cancel_call","req":"r"}`, "cluster call message"},
		{"no req", `{"op":"cancel_call","agent":"pi1"}`, "req"},
		{"long req", `{"op":"cancel_call","agent":"pi1","req":"` + strings.Repeat("r", 257) + `"}`, "req"},
		{"unknown op", `{"op":"chat","agent":"pi1","req":"r"}`, "unknown op"},
		{"not json", `[`, "cluster call message"},
		{"too large", `{"op":"cancel_call","agent":"pi1","req":"r","x":"` + strings.Repeat("a", maxCallEnvelope) + `"}`, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := decodeCallEnvelope([]byte(tc.in))
			if !testenv.WantErr(t, err, tc.err) && e == nil {
				t.Fatal("decodeCallEnvelope: no error and no envelope")
			}
		})
	}
}

// TestCallAnswersCrossNodes: what an edge actor answers a call with
// reaches the calling node as the same message.
func TestCallAnswersCrossNodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		msg   any
		final bool
	}{
		{"reply", &actors.Reply{RequestID: "r1", Report: wire.Report{AgentID: "pi1", ReportType: wire.ReportResult,
			Payload: json.RawMessage(`{"request_id":"r1","status":"success","result":"ok"}`), Timestamp: 17}}, true},
		{"failed", &actors.DispatchFailed{RequestID: "r2", Type: wire.ErrBusy, Err: "saturated", Movable: true}, true},
		{"failed transient", &actors.DispatchFailed{RequestID: "r3", Type: wire.ErrAgentOffline, Err: "publish", Transient: true}, true},
		{"output", &actors.ToolOutput{RequestID: "r4", Seq: 9, Output: "partial\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, final, ok := replyEnvelope("pi1", tc.msg)
			if !ok || final != tc.final {
				t.Fatalf("replyEnvelope: ok %v, final %v", ok, final)
			}
			got, err := decodeCallEnvelope(e.message().Value)
			if err != nil {
				t.Fatal(err)
			}
			back, final := got.answer()
			if final != tc.final {
				t.Errorf("final after the round trip = %v", final)
			}
			if a, b := mustJSON(t, tc.msg), mustJSON(t, back); a != b {
				t.Errorf("round trip:\n%s\n%s", a, b)
			}
		})
	}
	if _, _, ok := replyEnvelope("pi1", &actors.Dispatch{}); ok {
		t.Error("a dispatch is not an answer")
	}
}

func TestAnswersCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    wire.Report
		want bool
	}{
		{"result", wire.Report{ReportType: wire.ReportResult, Payload: json.RawMessage(`{"request_id":"tool-n1.5-1"}`)}, true},
		{"error", wire.Report{ReportType: wire.ReportError, Payload: json.RawMessage(`{"request_id":"tool-n1.5-1"}`)}, true},
		{"progress", wire.Report{ReportType: wire.ReportProgress, Payload: json.RawMessage(`{"request_id":"tool-n1.5-1"}`)}, true},
		{"accepted", wire.Report{ReportType: wire.ReportAccepted, Payload: json.RawMessage(`{"request_id":"tool-n1.5-1"}`)}, true},
		{"ping answer without request_id", wire.Report{ReportType: wire.ReportResult, Payload: json.RawMessage(`{"pong":true}`)}, true},
		{"heartbeat", wire.Report{ReportType: wire.ReportHeartbeat, Payload: json.RawMessage(`{}`)}, false},
		{"metric", wire.Report{ReportType: wire.ReportMetric, Payload: json.RawMessage(`{}`)}, false},
		{"tools_list answer", wire.Report{ReportType: wire.ReportResult, Payload: json.RawMessage(`{"request_id":"tools-pi1-17-1"}`)}, false},
		{"another agent's tools_list id", wire.Report{ReportType: wire.ReportResult, Payload: json.RawMessage(`{"request_id":"tools-pi2-17-1"}`)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.AgentID = "pi1"
			if got := answersCall("pi1", tc.r); got != tc.want {
				t.Errorf("answersCall = %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzDecodeCallEnvelope(f *testing.F) {
	f.Add([]byte(`{"op":"dispatch","agent":"pi1","req":"r","deadline_ms":1,"reply_addr":"h:1","command":{"command":"tool","request_id":"r"}}`))
	f.Add([]byte(`{"op":"failed","agent":"pi1","req":"r","failed":{"type":"busy"}}`))
	f.Add([]byte(`{"op":"reply","agent":"pi1","req":"r","report":{"payload":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeCallEnvelope(b)
		if err != nil {
			return
		}
		if e.Req == "" || len(e.Req) > 256 || wire.ValidateAgentID(e.Agent) != nil {
			t.Fatalf("accepted req %q of agent %q", e.Req, e.Agent)
		}
		switch e.Op {
		case opDispatch:
			if e.Command == nil || e.Command.RequestID != e.Req || e.ReplyAddr == "" || time.UnixMilli(e.DeadlineMS).Before(time.UnixMilli(1)) {
				t.Fatal("accepted a dispatch it cannot place")
			}
		case opReply, opFailed, opOutput:
			if msg, _ := e.answer(); msg == nil {
				t.Fatalf("accepted a %s it cannot answer with", e.Op)
			}
		}
	})
}
