package edge

import (
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestSlowToolLeavesWorkers: five slow calls of one tool do not take every
// worker; a call of another tool sent after them answers while they run,
// and all five still finish.
func TestSlowToolLeavesWorkers(t *testing.T) {
	p := startAgent(t, func(c *Config) { c.Tools.MaxConcurrent = 4 })
	for i := range 5 {
		p.Send(fmt.Sprintf(`{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":1.5}},"request_id":"slow%d"}`, i))
	}
	start := time.Now()
	p.Send(`{"command":"tool","payload":{"tool":"echo_args","parameters":{"message":"hi"}},"request_id":"quick"}`)
	r := p.Await("quick")
	if el := time.Since(start); el > time.Second {
		t.Errorf("an unrelated call waited %v behind slow calls of one tool", el)
	}
	if res, err := wire.DecodeToolResult(r); err != nil || res.Status != wire.StatusSuccess {
		t.Errorf("quick = %+v %v", res, err)
	}
	for i := range 5 {
		if res, err := wire.DecodeToolResult(p.Await(fmt.Sprintf("slow%d", i))); err != nil || res.Status != wire.StatusSuccess {
			t.Errorf("slow%d = %+v %v", i, res, err)
		}
	}
}

// TestLanes: one tool gets workers-1 slots, the rest park up to the
// bound, and a finished call hands its slot to the oldest parked one.
func TestLanes(t *testing.T) {
	l := newLanes(3, 2)
	q := func(id string) queued { return queued{cmd: wire.Command{RequestID: id}} }
	for i, want := range []struct{ run, parked bool }{{true, false}, {true, false}, {false, true}, {false, true}, {false, false}} {
		if run, parked := l.take("read", q(fmt.Sprint(i))); run != want.run || parked != want.parked {
			t.Fatalf("take %d = %v %v, want %+v", i, run, parked, want)
		}
	}
	if run, _ := l.take("bash", q("b")); !run {
		t.Fatal("another tool was held back by read's calls")
	}
	if next, ok := l.done("read"); !ok || next.cmd.RequestID != "2" {
		t.Fatalf("done handed on %q %v, want the oldest parked (2)", next.cmd.RequestID, ok)
	}
	if next, ok := l.done("read"); !ok || next.cmd.RequestID != "3" {
		t.Fatalf("done handed on %q %v, want 3", next.cmd.RequestID, ok)
	}
	if _, ok := l.done("read"); ok { // nothing parked: a slot frees
		t.Fatal("done handed on a command that was never parked")
	}
	if run, _ := l.take("read", q("5")); !run {
		t.Fatal("read did not get its freed slot")
	}
	if run, _ := l.take("read", q("6")); run {
		t.Fatal("read got a third slot")
	}
}
