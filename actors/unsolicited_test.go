package actors

import (
	"encoding/json"
	"fmt"
	"slices"
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

// TestReportDeliveredAgainIsSettledOnce: a result delivered twice (QoS 1
// is at least once; an agent resends from its outbox a result whose
// publish timed out while its MQTT client resends that publish on
// reconnecting) is audited as late once, and the second copy of a result
// already handed to its call is no late result at all.
func TestReportDeliveredAgainIsSettledOnce(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	answered := make(chan string, 1)
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
		answered <- cmd.RequestID
		echoReply(h)(cmd, p)
	}
	if ans := h.chat(t, "say hi"); ans.Err != nil || ans.Text != "tool said: echo:hi" {
		t.Fatalf("answer %+v", ans)
	}
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: "echo:hi", RequestID: <-answered})
	for range 2 {
		h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: "kept", RequestID: "cut-by-the-network"})
	}
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", Result: "last", RequestID: "made-up"})
	// The edge actor logs each drop as it handles the report, in order;
	// the events are stored off its mailbox.
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Contains(h.logs.String(), "request_id=made-up") },
		"the last report handled")
	if n := strings.Count(h.logs.String(), "unknown or expired request_id"); n != 2 {
		t.Fatalf("%d reports dropped as late, want 2 (the one delivered twice once, and the made-up one):\n%s", n, h.logs.String())
	}
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.Count(strings.Join(h.events.kinds(), ","), EventLateResult) == 2
	}, "two late results audited")
	var late []string
	for _, e := range h.events.All() {
		if e.Kind == EventLateResult {
			var d struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal(e.Detail, &d); err != nil {
				t.Fatal(err)
			}
			late = append(late, d.RequestID)
		}
	}
	if slices.Sort(late); !slices.Equal(late, []string{"cut-by-the-network", "made-up"}) {
		t.Fatalf("late results audited for %v, want the one delivered twice once, and the made-up one", late)
	}
}
