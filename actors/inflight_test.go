package actors

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestGaugesCountCallsAndHeartbeats: a call waiting on the agent is in
// flight until it is answered, and last seen follows every report.
func TestGaugesCountCallsAndHeartbeats(t *testing.T) {
	tr := transcript(callTurn("a", "pi-1__echo", `{"text":"x"}`), `{"content":"{{result a}}"}`)
	h := newHarness(t, tr, nil)
	release := make(chan struct{})
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
		<-release
		echoReply(h)(cmd, p)
	}
	if n := h.edges.InFlight("nobody"); n != 0 || !h.edges.LastSeen("nobody").IsZero() {
		t.Fatalf("unknown agent: %d in flight, last seen %v", n, h.edges.LastSeen("nobody"))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.chat(t, "go")
	}()
	testenv.Eventually(t, 5*time.Second, func() bool { return h.edges.InFlight("pi-1") == 1 }, "one call in flight")
	before := h.edges.LastSeen("pi-1")
	h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: wire.PresenceOnline}})
	testenv.Eventually(t, 5*time.Second, func() bool { return h.edges.LastSeen("pi-1").After(before) }, "last seen to move")
	close(release)
	<-done
	testenv.Eventually(t, 5*time.Second, func() bool { return h.edges.InFlight("pi-1") == 0 }, "nothing in flight")
}
