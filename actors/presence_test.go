package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestToolsListReplyNoLongerAwaitedIsIgnoredQuietly: a reply to a
// tools_list not awaited (a duplicate delivery, one that timed out, one
// from before a restart) is no late result; any other unknown id is.
func TestToolsListReplyNoLongerAwaitedIsIgnoredQuietly(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	h.edge.reply(wire.ToolsList{RequestID: toolsIDPrefix("pi-1") + "1-1", Tools: []wire.ToolInfo{{Name: "other"}}})
	h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "echo", RequestID: "made-up"})
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Contains(strings.Join(h.events.kinds(), ","), EventLateResult) }, "late result of the made-up id")
	if k := strings.Join(h.events.kinds(), ","); strings.Count(k, EventLateResult) != 1 {
		t.Fatalf("events %s: want exactly one late_result", k)
	}
	if tools := h.edges.Catalog().Agents["pi-1"].Tools; len(tools) != 1 || tools[0].Name != "echo" {
		t.Fatalf("tools %+v changed by a reply no longer awaited", tools)
	}
}

// TestRetainedCapabilitiesMakePresenceUnknown: capabilities alone (retained,
// after a restart) make an agent callable with its presence unknown, until
// the heartbeat timeout passes with nothing heard; an offline status heard
// first keeps it offline.
func TestRetainedCapabilitiesMakePresenceUnknown(t *testing.T) {
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) { o.HeartbeatTimeout = 300 * time.Millisecond }, nil)
	h.edge.others.Store(true)
	caps := func(id string) {
		h.sys.Root.Send(h.edges.PID, &CapabilitiesIn{AgentID: id, Capabilities: "sensor node: cpu_temp"})
	}
	h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "gone", Status: wire.Status{AgentID: "gone", Status: wire.PresenceOffline}})
	caps("gone")
	caps("quiet")
	testenv.Eventually(t, 5*time.Second, func() bool { return h.edges.Catalog().Agents["quiet"].PresenceUnknown }, "presence unknown")
	q := h.edges.Catalog().Agents["quiet"]
	if q.Online || !q.Callable() {
		t.Fatalf("quiet = %+v: want callable, not online", q)
	}
	if g := h.edges.Catalog().Agents["gone"]; g.Callable() {
		t.Fatalf("gone = %+v: its offline status must win over its retained capabilities", g)
	}
	box := &EdgeToolbox{Edges: h.edges}
	var desc string
	for _, d := range box.Defs() {
		if d.Name == EdgeCallTool {
			desc = d.Description
		}
	}
	if !strings.Contains(desc, "quiet: sensor node: cpu_temp") || !strings.Contains(desc, presenceUnknown) || strings.Contains(desc, "gone") {
		t.Fatalf("edge_call description:\n%s", desc)
	}
	target, bad := box.Resolve(llm.ToolCall{Name: EdgeCallTool, Arguments: []byte(`{"agent_id":"quiet","action":"cpu_temp"}`)})
	if bad != nil || target.AgentID != "quiet" || target.Tool != "cpu_temp" || string(target.Args) != "{}" {
		t.Fatalf("resolve: %+v %+v", target, bad)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return !h.edges.Catalog().Agents["quiet"].Callable() }, "offline after the heartbeat timeout")
}

// TestUnlistedAgentCalledByName: an agent that never listed its tools is
// described as such and called by any action name; one that listed them
// is held to its list.
func TestUnlistedAgentCalledByName(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	h.edge.others.Store(true)
	h.sys.Root.Send(h.edges.PID, &ReportIn{AgentID: "pub", Report: wire.Report{AgentID: "pub", ReportType: wire.ReportHeartbeat, Payload: []byte(`{}`)}})
	h.sys.Root.Send(h.edges.PID, &CapabilitiesIn{AgentID: "pub", Capabilities: "camera"})
	testenv.Eventually(t, 5*time.Second, func() bool { a := h.edges.Catalog().Agents["pub"]; return a.Online && a.Capabilities != "" }, "pub online")
	for _, mode := range []string{ToolsDirect, ToolsCompact} {
		box := &EdgeToolbox{Edges: h.edges, Mode: mode}
		target, bad := box.Resolve(llm.ToolCall{Name: EdgeCallTool, Arguments: []byte(`{"agent_id":"pub","action":"snap","params":{"w":1}}`)})
		if bad != nil || target.Tool != "snap" || string(target.Args) != `{"w":1}` || target.Schema != nil {
			t.Fatalf("%s: resolve unlisted: %+v %+v", mode, target, bad)
		}
		_, bad = box.Resolve(llm.ToolCall{Name: EdgeCallTool, Arguments: []byte(`{"agent_id":"pi-1","action":"snap"}`)})
		if bad == nil || bad.ErrorType() != wire.ErrNotFound {
			t.Fatalf("%s: a listed agent's missing action: %+v", mode, bad)
		}
	}
	box := &EdgeToolbox{Edges: h.edges, Select: map[string][]string{"pub": {"snap"}}}
	if _, bad := box.Resolve(llm.ToolCall{Name: EdgeCallTool, Arguments: []byte(`{"agent_id":"pub","action":"reboot"}`)}); bad == nil {
		t.Fatal("an action [loop.select] leaves out was sent")
	}
	if target, bad := box.Resolve(llm.ToolCall{Name: "pub__snap"}); bad != nil || target.Tool != "snap" {
		t.Fatalf("direct name of an unlisted agent: %+v %+v", target, bad)
	}
}
