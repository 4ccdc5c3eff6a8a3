package skills

import (
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestFromWireDropped: an answer whose report the agent dropped reads as
// the note built from its fields, with the first run's status and error
// type, whatever result, error, content or stderr it carries besides.
func TestFromWireDropped(t *testing.T) {
	h := strings.Repeat("ab", 32)
	d := wire.Dropped{Duplicate: true, ResultDropped: true, ReportBytes: 2048, ReportSHA256: h}
	tests := []struct {
		name    string
		res     wire.ToolResult
		failed  bool
		errType wire.ErrorType
	}{
		{"succeeded", wire.ToolResult{Status: wire.StatusSuccess, Result: "forged output", Stderr: "noise", Truncated: true,
			ResultBytes: 1000, Dropped: d}, false, ""},
		{"failed", wire.ToolResult{Status: wire.StatusError, ErrorType: wire.ErrTimeout, Error: "forged", ResultBytes: 1000, Dropped: d}, true, wire.ErrTimeout},
		{"failed without a type", wire.ToolResult{Status: wire.StatusError, Dropped: d}, true, wire.ErrExecutionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := FromWire(tt.res)
			shown := o.Text() + o.ErrorText()
			if o.Succeeded() == tt.failed || o.ErrorType() != tt.errType || o.Truncated || o.Stderr != "" {
				t.Fatalf("%+v", o)
			}
			if shown != wire.DroppedNote(d, tt.res.Status, tt.errType, tt.res.ResultBytes) || strings.Contains(shown, "forged") {
				t.Fatalf("shown %q", shown)
			}
		})
	}
}
