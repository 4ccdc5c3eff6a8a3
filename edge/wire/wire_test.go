package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wire", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeCommandGolden(t *testing.T) {
	tests := []struct {
		file      string
		command   string
		requestID string
		tool      string
		params    map[string]any
		timeoutMS int64
	}{
		{"command_tool.json", CmdTool, "tool-1739635200000000000", "bash", map[string]any{"command": "uptime"}, 30000},
		{"command_tool_spec.json", CmdTool, "req-1739635200000000000", "bash", map[string]any{"command": "ls -la"}, 30000},
		{"command_ping.json", CmdPing, "ping-1", "", nil, 0},
		{"command_prompt.json", CmdPrompt, "prompt-42", "", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := DecodeCommand(golden(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if c.Command != tt.command || c.RequestID != tt.requestID {
				t.Fatalf("got command %q request_id %q, want %q %q", c.Command, c.RequestID, tt.command, tt.requestID)
			}
			if tt.command != CmdTool {
				return
			}
			p, err := DecodeToolPayload(c.Payload)
			if err != nil {
				t.Fatal(err)
			}
			var params map[string]any
			if err := json.Unmarshal(p.Parameters, &params); err != nil {
				t.Fatal(err)
			}
			if p.Tool != tt.tool || p.TimeoutMS != tt.timeoutMS || !reflect.DeepEqual(params, tt.params) {
				t.Fatalf("payload = %+v params %v", p, params)
			}
		})
	}
}

func TestDecodePromptPayloadGolden(t *testing.T) {
	c, err := DecodeCommand(golden(t, "command_prompt.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodePromptPayload(c.Payload)
	if err != nil {
		t.Fatal(err)
	}
	want := PromptPayload{Prompt: "what's the CPU temperature right now?", SystemPrompt: "You are a Pi.", EnableTools: true, MaxTokens: 1024}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
}

func TestDecodeReportGolden(t *testing.T) {
	exit0 := 0
	tests := []struct {
		file       string
		reportType string
		requestID  string
		want       ToolResult
	}{
		{"report_tool_success.json", ReportResult, "tool-1739635200000000000",
			ToolResult{Status: StatusSuccess, Tool: "bash", Result: " 10:00:00 up 3 days", ElapsedMS: 12, RequestID: "tool-1739635200000000000"}},
		{"report_tool_error.json", ReportResult, "tool-7",
			ToolResult{Status: StatusError, Tool: "bash", Error: "Command timed out after 30000ms", ErrorType: ErrExecutionFailed, ElapsedMS: 30001, RequestID: "tool-7"}},
		{"report_flat_spec.json", ReportResult, "",
			ToolResult{Status: StatusSuccess, Tool: "bash", Result: "temp=45.6°C", ExitCode: &exit0, ElapsedMS: 123}},
		{"report_flat_error_spec.json", ReportError, "",
			ToolResult{Status: StatusError, Tool: "bash", Error: "Command timed out after 30000ms", ErrorType: ErrTimeout}},
		{"report_error.json", ReportError, "cmd-9",
			ToolResult{Status: StatusError, Error: "unknown command: trade", ErrorType: ErrExecutionFailed, RequestID: "cmd-9"}},
		{"report_tool_dropped.json", ReportResult, "tool-8",
			ToolResult{Status: StatusError, Tool: "bash", Error: "This request already ran once on the agent and failed (timeout); its report is no longer held by the agent.",
				ErrorType: ErrTimeout, RequestID: "tool-8", ResultBytes: 1 << 20,
				Dropped: Dropped{Duplicate: true, ResultDropped: true, ReportBytes: 1048791, ReportSHA256: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := goldenReport(t, tt.file)
			if r.ReportType != tt.reportType || r.AgentID != "alex-eye" || r.RequestID() != tt.requestID {
				t.Fatalf("envelope %+v request_id %q", r, r.RequestID())
			}
			res, err := DecodeToolResult(r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", res, tt.want)
			}
		})
	}
}

func TestDecodeOtherReportsGolden(t *testing.T) {
	r := goldenReport(t, "report_ping.json")
	if r.RequestID() != "" || r.Timestamp != 1739635200 || r.AgentType != "monitor" {
		t.Fatalf("ping report %+v", r)
	}

	r = goldenReport(t, "report_heartbeat.json")
	var hb Heartbeat
	if err := json.Unmarshal(r.Payload, &hb); err != nil {
		t.Fatal(err)
	}
	if r.ReportType != ReportHeartbeat || hb.UptimeSec != 3600 || hb.ActionsFailed != 1 || hb.MemoryBytes != 7340032 {
		t.Fatalf("heartbeat %+v", hb)
	}

	r = goldenReport(t, "report_prompt.json")
	pr, err := DecodePromptResult(r)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Content != "CPU temperature is 42.3°C" || pr.RequestID != "prompt-42" || len(pr.ToolsExecuted) != 1 ||
		!pr.ToolsExecuted[0].Success || pr.Metadata.OutputTokens != 18 {
		t.Fatalf("prompt result %+v", pr)
	}

	r = goldenReport(t, "report_tools_list.json")
	tl, err := DecodeToolsList(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.RequestID() != "tl-1" || len(tl.Tools) != 1 || tl.Tools[0].Name != "sysinfo" || tl.Tools[0].TimeoutMS != 5000 {
		t.Fatalf("tools list %+v", tl)
	}
}

func TestDecodePresenceGolden(t *testing.T) {
	c, err := DecodeCapabilities("alex-eye", golden(t, "capabilities.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Capabilities != "Pi sensor node — temperature, CPU/disk stats, camera" {
		t.Fatalf("capabilities %q", c.Capabilities)
	}
	s, err := DecodeStatus("alex-eye", golden(t, "status_online.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != PresenceOnline || s.UptimeSeconds != 5 || s.MemoryMB != 7.2 {
		t.Fatalf("status %+v", s)
	}
	s, err = DecodeStatus("alex-eye", golden(t, "status_offline_will.json"))
	if err != nil || s.Status != PresenceOffline {
		t.Fatalf("status %+v err %v", s, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		file   string
		decode func([]byte) error
		field  string // expected DecodeError.Field; "" = any
		text   string // substring of the message
	}{
		{"command_no_request_id.json", cmd, "request_id", "required"},
		{"command_wrong_type.json", cmd, "command", "want string"},
		{"command_payload_array.json", cmd, "payload", "JSON object"},
		{"command_trailing.json", cmd, "", "trailing data"},
		{"command_array.json", cmd, "", "JSON object"},
		{"command_truncated.json", cmd, "", "decode command"},
		{"report_other_agent.json", rep, "agent_id", "does not match"},
		{"report_unknown_type.json", rep, "report_type", "gossip"},
		{"report_no_type.json", rep, "report_type", "required"},
		{"status_unknown.json", func(b []byte) error { _, err := DecodeStatus("alex-eye", b); return err }, "status", "sleeping"},
		{"report_tool_dropped_bad_hash.json", func(b []byte) error {
			r, err := DecodeReport("alex-eye", b)
			if err == nil {
				_, err = DecodeToolResult(r)
			}
			return err
		}, "report_sha256", "hex"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			err := tt.decode(golden(t, filepath.Join("bad", tt.file)))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
			if tt.field != "" && de.Field != tt.field {
				t.Fatalf("field = %q, want %q (%v)", de.Field, tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("error %q does not mention %q", err, tt.text)
			}
		})
	}
}

func cmd(b []byte) error { _, err := DecodeCommand(b); return err }
func rep(b []byte) error { _, err := DecodeReport("alex-eye", b); return err }

func TestDecodeTooLarge(t *testing.T) {
	b := []byte(`{"command":"tool","request_id":"x","payload":{"pad":"` + strings.Repeat("a", MaxMessageBytes) + `"}}`)
	if _, err := DecodeCommand(b); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestToolResultNonStringResult(t *testing.T) {
	r, err := DecodeReport("a", []byte(`{"status":"success","tool":"t","result":{"temp": 41.5, "unit":"C"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := DecodeToolResult(r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != `{"temp":41.5,"unit":"C"}` {
		t.Fatalf("result %q", res.Result)
	}
}

func TestEncodeMatchesGolden(t *testing.T) {
	// What evoclaw sends must be byte-for-byte decodable by the public agent:
	// compare our encoding with the hand-written golden semantically.
	c, err := NewCommand(CmdTool, "tool-1739635200000000000", ToolPayload{Tool: "bash", Parameters: json.RawMessage(`{"command":"uptime"}`), TimeoutMS: 30000})
	if err != nil {
		t.Fatal(err)
	}
	assertEncodesAs(t, c, "command_tool.json")

	r, err := NewReport("alex-eye", "monitor", ReportResult, 1739635200, ToolResult{Status: StatusSuccess, Tool: "bash", Result: " 10:00:00 up 3 days", ElapsedMS: 12, RequestID: "tool-1739635200000000000"})
	if err != nil {
		t.Fatal(err)
	}
	assertEncodesAs(t, r, "report_tool_success.json")
}

// goldenReport decodes the golden report file name as sent by alex-eye.
func goldenReport(t *testing.T, name string) Report {
	t.Helper()
	r, err := DecodeReport("alex-eye", golden(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// assertEncodesAs marshals v and compares it, as JSON, with the golden
// file name.
func assertEncodesAs(t *testing.T, v any, name string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, got, golden(t, name))
}

func assertJSONEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("encoding differs\n got: %s\nwant: %s", got, want)
	}
}

func TestParseTopic(t *testing.T) {
	tests := []struct {
		topic, id, kind string
		ok              bool
	}{
		{"evoclaw/agents/pi-1/reports", "pi-1", KindReports, true},
		{"evoclaw/agents/pi_1/status", "pi_1", KindStatus, true},
		{"evoclaw/agents/pi-1/commands", "pi-1", KindCommands, true},
		{"evoclaw/agents/pi-1/capabilities", "pi-1", KindCapabilities, true},
		{"evoclaw/agents/pi-1/reports/x", "", "", false},
		{"evoclaw/agents/pi.1/reports", "", "", false},
		{"evoclaw/agents//reports", "", "", false},
		{"evoclaw/agents/pi-1/other", "", "", false},
		{"other/agents/pi-1/reports", "", "", false},
		{"evoclaw/agents/" + strings.Repeat("a", MaxAgentIDLen+1) + "/reports", "", "", false},
	}
	for _, tt := range tests {
		id, kind, err := ParseTopic(tt.topic)
		if (err == nil) != tt.ok || id != tt.id || kind != tt.kind {
			t.Errorf("ParseTopic(%q) = %q, %q, %v", tt.topic, id, kind, err)
		}
	}
}

// TestDecodeToolsListRefusesNonLists: the public agent answers a command
// it does not know with an error report; neither that nor a result without
// "tools" is a (empty) tool list.
func TestDecodeToolsListRefusesNonLists(t *testing.T) {
	for _, tc := range []struct {
		typ, payload string
		ok           bool
	}{
		{ReportError, `{"error":"unknown command: tools_list","request_id":"t1"}`, false},
		{ReportResult, `{"status":"error","error":"no","request_id":"t1"}`, false},
		{ReportResult, `{"tools":[],"request_id":"t1"}`, true},
		{ReportResult, `{"tools":null,"request_id":"t1"}`, true},
	} {
		_, err := DecodeToolsList(Report{ReportType: tc.typ, Payload: []byte(tc.payload)})
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: err %v, want ok=%v", tc.typ, tc.payload, err, tc.ok)
		}
	}
}

// TestValidateToolPrefix: an id whose tools' names ({id}__{tool}, split
// again at the first "__") would read back as another id's is refused;
// the rest of the id grammar is ValidateAgentID's.
func TestValidateToolPrefix(t *testing.T) {
	for _, tt := range []struct {
		id string
		ok bool
	}{
		{"pi-1", true}, {"pi_kitchen", true}, {"_pi", true}, {"a_b_c", true}, {"x", true},
		{"a__b", false}, {"__a", false}, {"pi_", false}, {"a___b", false}, {"_", false},
	} {
		err := ValidateToolPrefix(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateToolPrefix(%q) = %v, want ok %v", tt.id, err, tt.ok)
			continue
		}
		if tt.ok {
			// Joined with a tool's name and split at the first separator,
			// the id comes back whole.
			if got, _, _ := strings.Cut(tt.id+ToolSep+"x__y", ToolSep); got != tt.id {
				t.Errorf("%q: its tool's name reads back as agent %q", tt.id, got)
			}
		}
	}
}
