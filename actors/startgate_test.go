package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// gatePublisher records the commands sent; a tool command whose request
// id is in hold waits for its channel, then fails.
type gatePublisher struct {
	mu   sync.Mutex
	sent []wire.Command
	hold map[string]chan struct{}
}

func (p *gatePublisher) Publish(_ context.Context, _ string, b []byte) error {
	c, err := wire.DecodeCommand(b)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.sent = append(p.sent, c)
	ch := p.hold[c.RequestID]
	p.mu.Unlock()
	if ch != nil && c.Command == wire.CmdTool {
		<-ch
		return errors.New("no ack from the broker")
	}
	return nil
}

// start is the run flag of the start command sent for id, if any.
func (p *gatePublisher) start(id string) (run, sent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.sent {
		if c.Command == wire.CmdStart && c.RequestID == id {
			s, err := wire.DecodeStartPayload(c.Payload)
			return s.Run && err == nil, true
		}
	}
	return false, false
}

// TestEdgeActorStartGate: the edge actor says run to an accepted request
// it still holds, and never lets a request it said run to move; one it
// did not say run to moves when its agent goes offline.
func TestEdgeActorStartGate(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(sys.Shutdown)
	pub := &gatePublisher{hold: map[string]chan struct{}{"held": make(chan struct{})}}
	edges, err := SpawnEdges(sys.Root, EdgeOptions{Publisher: pub, TickInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *DispatchFailed, 16)
	waiter := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*DispatchFailed); ok {
			got <- m
		}
	}))
	online := func(features ...string) {
		sys.Root.Send(edges.PID, &StatusIn{AgentID: "a1", Status: wire.Status{AgentID: "a1", Status: wire.PresenceOnline, Features: features}})
	}
	offline := func() {
		sys.Root.Send(edges.PID, &StatusIn{AgentID: "a1", Status: wire.Status{AgentID: "a1", Status: wire.PresenceOffline}})
	}
	dispatch := func(id string, gated bool) {
		cmd, err := wire.NewCommand(wire.CmdTool, id, wire.ToolPayload{Tool: "t", StartGate: gated})
		if err != nil {
			t.Fatal(err)
		}
		sys.Root.Send(edges.PID, &Dispatch{AgentID: "a1", Command: cmd, ReplyTo: waiter, Deadline: time.Now().Add(time.Minute), Gated: gated})
	}
	accept := func(id string) {
		b, _ := json.Marshal(wire.Accepted{RequestID: id})
		sys.Root.Send(edges.PID, &ReportIn{AgentID: "a1", Report: wire.Report{AgentID: "a1", ReportType: wire.ReportAccepted, Payload: b}})
	}
	started := func(id string, want bool) {
		t.Helper()
		testenv.Eventually(t, 5*time.Second, func() bool { _, sent := pub.start(id); return sent }, "start for "+id)
		if run, _ := pub.start(id); run != want {
			t.Fatalf("start for %s says run=%v, want %v", id, run, want)
		}
	}
	failures := func(n int) map[string]*DispatchFailed {
		t.Helper()
		out := map[string]*DispatchFailed{}
		for range n {
			select {
			case m := <-got:
				out[m.RequestID] = m
			case <-time.After(10 * time.Second):
				t.Fatalf("%d of %d failures arrived: %v", len(out), n, out)
			}
		}
		return out
	}

	online(wire.FeatureStartGate)
	testenv.Eventually(t, 5*time.Second, func() bool { return edges.Catalog().Agents["a1"].StartGate }, "a1 with the start gate")

	dispatch("ran", true)
	dispatch("waiting", true)
	dispatch("plain", false)
	dispatch("held", true)
	accept("ran")
	started("ran", true)
	accept("nobody")
	started("nobody", false)
	accept("held")
	started("held", true)
	close(pub.hold["held"]) // its publish fails after the agent accepted it
	testenv.Eventually(t, 5*time.Second, func() bool { return edges.InFlight("a1") == 4 }, "four requests in flight")
	offline()
	fs := failures(4)
	for id, movable := range map[string]bool{"ran": false, "waiting": true, "plain": false, "held": false} {
		f := fs[id]
		if f == nil || f.Movable != movable || f.Type != wire.ErrAgentOffline || f.Transient {
			t.Errorf("%s: %+v, want agent_offline with Movable %v", id, f, movable)
		}
	}
	dispatch("never-sent", true)
	if f := failures(1)["never-sent"]; f == nil || !f.Movable {
		t.Errorf("dispatch to an offline agent: %+v, want movable", f)
	}

	// An agent that stops announcing the feature loses it.
	online()
	testenv.Eventually(t, 5*time.Second, func() bool {
		a := edges.Catalog().Agents["a1"]
		return a.Online && !a.StartGate
	}, "a1 online without the start gate")
	if t.Failed() {
		pub.mu.Lock()
		t.Log(fmt.Sprint(pub.sent))
		pub.mu.Unlock()
	}
}
