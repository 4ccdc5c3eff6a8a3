package actors

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// groupFleet plays several agents behind one Publisher: each answers
// tools_list with one echo tool and a tool command with answer(agent, cmd).
type groupFleet struct {
	t      *testing.T
	root   *actor.RootContext
	edges  *Edges
	answer func(agent string, cmd wire.Command, p wire.ToolPayload) any
}

func (f *groupFleet) Publish(_ context.Context, topic string, b []byte) error {
	agent, _, err := wire.ParseTopic(topic)
	if err != nil {
		f.t.Errorf("topic %s: %v", topic, err)
		return nil
	}
	cmd, err := wire.DecodeCommand(b)
	if err != nil {
		f.t.Errorf("command: %v", err)
		return nil
	}
	var payload any
	switch cmd.Command {
	case wire.CmdToolsList:
		payload = wire.ToolsList{RequestID: cmd.RequestID, Tools: []wire.ToolInfo{{Name: "echo", Parameters: map[string]any{"type": "object"}}}}
	case wire.CmdTool:
		p, _ := wire.DecodeToolPayload(cmd.Payload)
		payload = f.answer(agent, cmd, p)
	}
	if payload != nil {
		r, err := wire.NewReport(agent, "", wire.ReportResult, time.Now().Unix(), payload)
		if err != nil {
			f.t.Error(err)
			return nil
		}
		f.root.Send(f.edges.PID, &ReportIn{AgentID: agent, Report: r})
	}
	return nil
}

// eventAudit records tool calls and events.
type eventAudit struct {
	recordingAudit
	recordingEvents
}

// TestGroupCallMovesOnNotStarted: a member that answers not_started (it
// was never told to run the call) hands the call to another member; the
// row names the member that ran it, and a call_moved event the one it left.
func TestGroupCallMovesOnNotStarted(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(sys.Shutdown)
	fleet := &groupFleet{t: t, root: sys.Root}
	edges, err := SpawnEdges(sys.Root, EdgeOptions{Publisher: fleet, TickInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fleet.edges = edges
	fleet.answer = func(agent string, cmd wire.Command, p wire.ToolPayload) any {
		if agent == "a1" {
			return wire.ToolResult{Status: wire.StatusError, Tool: p.Tool, RequestID: cmd.RequestID,
				ErrorType: wire.ErrNotStarted, Error: "the call did not run on this agent"}
		}
		return wire.ToolResult{Status: wire.StatusSuccess, Tool: p.Tool, RequestID: cmd.RequestID, Result: "ran on " + agent}
	}
	for _, id := range []string{"a1", "a2"} {
		sys.Root.Send(edges.PID, &StatusIn{AgentID: id, Status: wire.Status{AgentID: id, Status: wire.PresenceOnline,
			Features: []string{wire.FeatureStartGate}}})
	}
	testenv.Eventually(t, 5*time.Second, func() bool {
		for _, id := range []string{"a1", "a2"} {
			if a := edges.Catalog().Agents[id]; !a.Online || len(a.Tools) != 1 || !a.StartGate {
				return false
			}
		}
		return true
	}, "a1 and a2 online with echo")
	// a2 is busier, so the call goes to a1 first.
	edges.gauges.of("a2").inFlight.Store(5)
	p, err := scripted.Parse([]byte(`{"turns": [
		{"content": "", "tool_calls": [{"id": "c1", "name": "grp__echo", "arguments": {}}]},
		{"content": "{{result c1}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	audit := &eventAudit{}
	box := &GroupToolbox{Edges: edges, Groups: []Group{{Name: "grp", Members: []string{"a*"}}}}
	convs, err := SpawnConversations(sys.Root, ConvOptions{Provider: p, Edges: edges, Audit: audit, Toolbox: box, Node: "orch",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Ask(sys.Root, convs.PID, &Chat{ConversationID: "c", Text: "go"}, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ans := res.(*Answer); ans.Err != nil || ans.Text != "ran on a2" {
		t.Fatalf("answer %+v", ans)
	}
	recs := audit.recordingAudit.All()
	if len(recs) != 1 || recs[0].AgentID != "a2" || recs[0].Status != "success" || recs[0].Tool != "grp__echo" {
		t.Fatalf("rows %+v", recs)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Contains(strings.Join(audit.kinds(), ","), EventCallMoved) }, "call_moved")
	ev := audit.recordingEvents.All()[0]
	var d map[string]any
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		t.Fatal(err)
	}
	if ev.AgentID != "a1" || d["from"] != "a1" || d["to"] != "a2" || d["first"] != "a1" || d["group"] != "grp" || d["request_id"] != recs[0].RequestID {
		t.Fatalf("event %+v %v", ev, d)
	}
}
