package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestLateResultsAreStoredWithinAQuota: an agent sending results for
// request_ids nobody waits for gets a few stored per window, with short
// excerpts; the rest are counted, and the first one stored in the next
// window says how many were left out.
func TestLateResultsAreStoredWithinAQuota(t *testing.T) {
	clock := testenv.NewClock(time.Now())
	quota := NewEventQuota(3, time.Minute)
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) {
		o.Now, o.EventQuota, o.ExcerptBytes = clock.Now, quota, 100
	}, nil)
	big := strings.Repeat("r", 3<<10)
	for i := range 50 {
		h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: big, RequestID: fmt.Sprintf("made-up-%d", i)})
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return quota.Refused() == 47 }, "47 late results counted, not stored")
	clock.Add(time.Minute)
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: big, RequestID: "next-window"})
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.Count(strings.Join(h.events.kinds(), ","), EventLateResult) == 4
	}, "four late results stored")

	for _, e := range h.events.All() {
		if e.Kind != EventLateResult {
			continue
		}
		var d struct {
			RequestID  string `json:"request_id"`
			Excerpt    string `json:"result_excerpt"`
			Bytes      int    `json:"result_bytes"`
			Suppressed int    `json:"suppressed_before"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Excerpt) > 100+len("…(3072 bytes)") || d.Bytes != len(big) {
			t.Errorf("event of %s keeps %d bytes of excerpt, result_bytes %d", d.RequestID, len(d.Excerpt), d.Bytes)
		}
		if want := map[bool]int{true: 47}[d.RequestID == "next-window"]; d.Suppressed != want {
			t.Errorf("event of %s: suppressed_before %d, want %d", d.RequestID, d.Suppressed, want)
		}
	}
	if n := strings.Count(h.logs.String(), "unknown or expired request_id"); n != 4 {
		t.Errorf("%d log lines for 51 late results, want one per stored event (4)", n)
	}
}
