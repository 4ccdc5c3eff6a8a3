package actors

import (
	"fmt"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/skills"
)

// TestToolContentSaysTheWholeSize: a result the agent already cut and
// that is still over MaxToolResultBytes tells the model the size the tool
// produced, not only the size that reached the node, and stays within
// the bound.
func TestToolContentSaysTheWholeSize(t *testing.T) {
	for _, tc := range []struct {
		name      string
		text      int
		truncated bool
		total     int64
		want      string
	}{
		{"cut by the agent, over the bound", MaxToolResultBytes + 100, true, 3_000_000_000, "3000000000 bytes in all"},
		{"cut by the agent, within the bound", 1000, true, 5000, "5000 bytes in all"},
		{"whole, over the bound", MaxToolResultBytes + 100, false, 0, fmt.Sprintf("of %d bytes", MaxToolResultBytes+100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := skills.Output{Content: []skills.Block{skills.TextBlock(strings.Repeat("y", tc.text))}, Truncated: tc.truncated, ResultBytes: tc.total}
			got := toolContent("bash", res)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("content ends %q, want %q", got[max(0, len(got)-120):], tc.want)
			}
			if len(got) > MaxToolResultBytes && tc.text > MaxToolResultBytes {
				t.Fatalf("content of %d bytes, over %d", len(got), MaxToolResultBytes)
			}
		})
	}
}
