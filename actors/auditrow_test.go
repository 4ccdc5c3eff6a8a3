package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
)

func TestAuditRow(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	exit := 2
	big := strings.Repeat("é", persistence.MaxExcerptBytes)
	tests := []struct {
		name  string
		ref   CallRef
		res   wire.ToolResult
		check func(t *testing.T, r persistence.ToolCall)
	}{
		{"the caller's name", CallRef{Tool: "pi__read"}, wire.ToolResult{Tool: "read", Status: "success"},
			func(t *testing.T, r persistence.ToolCall) {
				if r.Tool != "pi__read" {
					t.Fatalf("tool %q", r.Tool)
				}
			}},
		{"no name", CallRef{}, wire.ToolResult{Tool: "read", Status: "error"},
			func(t *testing.T, r persistence.ToolCall) {
				if r.Tool != "(unknown)" {
					t.Fatalf("tool %q", r.Tool)
				}
			}},
		{"params kept only when JSON", CallRef{Tool: "t", Params: json.RawMessage(`{"a":`)}, wire.ToolResult{Status: "success"},
			func(t *testing.T, r persistence.ToolCall) {
				if r.Params != nil {
					t.Fatalf("params %s", r.Params)
				}
			}},
		{"a cut result keeps its full size", CallRef{Tool: "t", Params: json.RawMessage(`{"a":1}`)},
			wire.ToolResult{Status: "success", Result: big, ResultBytes: 1 << 20, Truncated: true, ExitCode: &exit, ElapsedMS: 7},
			func(t *testing.T, r persistence.ToolCall) {
				if r.ResultBytes != 1<<20 || len(r.ResultExcerpt) > persistence.MaxExcerptBytes || string(r.Params) != `{"a":1}` ||
					r.ExitCode == nil || *r.ExitCode != 2 || r.ElapsedMs != 7 {
					t.Fatalf("row %+v", r)
				}
			}},
		{"an error row", CallRef{Node: "n", Side: persistence.SideEdge, RequestID: "r1", ConversationID: "c", AgentID: "pi", CallID: "k"},
			wire.ToolResult{Tool: "bash", Status: "error", ErrorType: wire.ErrTimeout, Error: "late", ElapsedMS: -3},
			func(t *testing.T, r persistence.ToolCall) {
				if r.Node != "n" || r.Side != "edge" || r.RequestID != "r1" || r.ConversationID != "c" || r.AgentID != "pi" ||
					r.CallID != "k" || r.ErrorType != "timeout" || r.Error != "late" || r.ElapsedMs != 0 || !r.Time.Equal(at) ||
					r.Time.Location() != time.UTC {
					t.Fatalf("row %+v", r)
				}
				if err := r.Validate(); err != nil {
					t.Fatal(err)
				}
			}},
		{"an agent's answer: the observed round trip, and the agent's own figure", CallRef{Tool: "t", Elapsed: 1500 * time.Millisecond, AgentReported: true},
			wire.ToolResult{Status: "success", ElapsedMS: 2},
			func(t *testing.T, r persistence.ToolCall) {
				if r.ElapsedMs != 1500 || r.AgentElapsedMs == nil || *r.AgentElapsedMs != 2 {
					t.Fatalf("row %+v", r)
				}
			}},
		{"a timeout: the observed wait, no agent figure", CallRef{Tool: "t", Elapsed: 5 * time.Second},
			wire.ToolResult{Status: "error", ErrorType: wire.ErrTimeout},
			func(t *testing.T, r persistence.ToolCall) {
				if r.ElapsedMs != 5000 || r.AgentElapsedMs != nil {
					t.Fatalf("row %+v", r)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, AuditRow(tt.ref, skills.FromWire(tt.res), at)) })
	}
}
