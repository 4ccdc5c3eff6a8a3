package actors

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// Many more dispatches to one agent than its actor's mailbox holds: the
// senders wait for room, and every dispatch is answered, sent or refused
// as busy; none is dropped.
func TestSmallAgentMailboxDropsNothing(t *testing.T) {
	const mailbox, inFlight, n = 8, 4, 300
	var sent atomic.Int32
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) {
		o.AgentMailboxSize, o.MaxInFlight = mailbox, inFlight
	}, nil)
	h.edge.onTool = func(wire.Command, wire.ToolPayload) { sent.Add(1) } // never answers: calls stay in flight
	var busy, other atomic.Int32
	collector, err := h.sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*DispatchFailed); ok {
			if m.Type == wire.ErrBusy {
				busy.Add(1)
			} else {
				other.Add(1)
			}
		}
	}), "collector")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cmd, err := wire.NewCommand(wire.CmdTool, fmt.Sprintf("r%d", i), wire.ToolPayload{Tool: "echo", Parameters: []byte(`{}`),
			TimeoutMS: 60000, RequestID: fmt.Sprintf("r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		h.sys.Root.Send(h.edges.PID, &Dispatch{AgentID: "pi-1", Command: cmd, ReplyTo: collector, Deadline: time.Now().Add(time.Minute)})
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return sent.Load()+busy.Load()+other.Load() == n },
		"every dispatch sent or refused")
	if sent.Load() != inFlight || busy.Load() != n-inFlight || other.Load() != 0 {
		t.Fatalf("sent %d, busy %d, other %d; want %d, %d, 0", sent.Load(), busy.Load(), other.Load(), inFlight, n-inFlight)
	}
}
