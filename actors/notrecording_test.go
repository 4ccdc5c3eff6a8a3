package actors

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// TestAgentNotRecordingShown: what an agent's online status says of its
// audit trail (wire.Status.NotRecording) is in its catalog entry until a
// status says otherwise or it goes offline, and an agent_online with
// changed records each change of whether it can record, not each change
// of the words. The node listed such an agent as healthy.
func TestAgentNotRecordingShown(t *testing.T) {
	addrs := &fakeAddresses{addr: "192.0.2.7:50123"}
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) { o.AgentAddress = addrs.lookup }, nil)
	testenv.Eventually(t, 5*time.Second, func() bool { return len(h.events.All()) == 1 }, "the first agent_online")
	status := func(presence, notRecording string) *StatusIn {
		return &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: presence, Host: "pi-kitchen", NotRecording: wire.LooseString(notRecording)}}
	}
	steps := []struct {
		name    string
		msg     *StatusIn
		catalog string // the catalog's NotRecording after the step
		// why, not_recording and kind of the event the step writes; "" : none
		kind, why, detail string
	}{
		{"host said", status(wire.PresenceOnline, ""), "", persistence.EventAgentOnline, "online status with another host, version or address", ""},
		{"disk full", status(wire.PresenceOnline, "its disk is full: 12 KiB free"), "its disk is full: 12 KiB free",
			persistence.EventAgentOnline, "online status saying the agent cannot record", "its disk is full: 12 KiB free"},
		{"other words", status(wire.PresenceOnline, "its disk is full: 8 KiB free"), "its disk is full: 8 KiB free", "", "", ""},
		{"room again", status(wire.PresenceOnline, ""), "", persistence.EventAgentOnline, "online status saying the agent records again", ""},
		{"full again", status(wire.PresenceOnline, "read-only"), "read-only", persistence.EventAgentOnline, "online status saying the agent cannot record", "read-only"},
		{"offline", status(wire.PresenceOffline, ""), "", persistence.EventAgentOffline, "agent reported offline", ""},
	}
	wantEvents := 1
	for _, s := range steps {
		h.sys.Root.Send(h.edges.PID, s.msg)
		barrier(t, h)
		if got := h.edges.Catalog().Agents["pi-1"].NotRecording; got != s.catalog {
			t.Fatalf("%s: catalog says not recording %q, want %q", s.name, got, s.catalog)
		}
		if s.kind == "" {
			continue
		}
		wantEvents++
		ev, got := nthEvent(t, h, wantEvents, s.name)
		nr, _ := got["not_recording"].(string)
		if ev.Kind != s.kind || got["why"] != s.why || nr != s.detail || (s.kind == persistence.EventAgentOnline && got["changed"] != true) {
			t.Fatalf("%s: event %s %s, want %s why %q not_recording %q", s.name, ev.Kind, ev.Detail, s.kind, s.why, s.detail)
		}
	}
	time.Sleep(100 * time.Millisecond) // an event a step should not have written
	if n := len(h.events.All()); n != wantEvents {
		t.Fatalf("%d events, want %d: %v", n, wantEvents, h.events.kinds())
	}
}
