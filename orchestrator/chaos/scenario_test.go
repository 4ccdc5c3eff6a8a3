package chaos

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// scenarioBound is how long one scenario may take in a test.
const scenarioBound = 90 * time.Second

// runScenario runs name with few calls and fails the test on any problem.
func runScenario(t *testing.T, name string) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioBound)
	defer cancel()
	var out bytes.Buffer
	rep, err := Run(ctx, name, Options{Binary: evoclawBinary(t), Calls: 9, Dir: t.TempDir(), Out: &out})
	if rep != nil {
		rep.Write(&out)
	}
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("%d checks failed: %s", len(rep.Problems), strings.Join(rep.Problems, "; "))
	}
	ended := 0 // calls an orchestrator finished, so audited
	for _, c := range rep.Calls {
		if c.Outcome != OutcomeNodeKilled && c.Outcome != OutcomeNodeLost {
			ended++
		}
	}
	if len(rep.RanTwice) > 0 || rep.Runs == 0 || rep.Joined != rep.AgentRows || rep.OrchestratorRows != ended {
		t.Fatalf("runs %d (twice %v), rows: orchestrator %d for %d calls that ended, agents %d, joined %d",
			rep.Runs, rep.RanTwice, rep.OrchestratorRows, ended, rep.AgentRows, rep.Joined)
	}
	return rep
}

// victim returns the call the fault cut: the first that did not succeed.
func victim(t *testing.T, rep *Report) Call {
	t.Helper()
	for _, c := range rep.Calls {
		if c.Outcome != "success" {
			return c
		}
	}
	t.Fatal("no call was cut by the fault")
	return Call{}
}

func mustTiming(t *testing.T, rep *Report, what string) time.Duration {
	t.Helper()
	d, ok := rep.Timing(what)
	if !ok || d <= 0 {
		t.Fatalf("no timing %q in %+v", what, rep.Timings)
	}
	return d
}

func TestBrokerRestart(t *testing.T) {
	rep := runScenario(t, "broker-restart")
	// The call in flight at the kill: its result either arrives (sent
	// again after the reconnect if the fresh broker dropped it) or the
	// agent was silent past the heartbeat timeout. A timeout would mean
	// the result was lost.
	var v Call
	for _, c := range rep.Calls {
		if c.Seconds == victimRun {
			v = c
		}
	}
	if v.Outcome != "success" && v.Outcome != string(wire.ErrAgentOffline) {
		t.Fatalf("call cut by the broker kill (%s) ended %s, want success or agent_offline", v.Tag, v.Outcome)
	}
	mustTiming(t, rep, "broker down (kill to restarted broker ready)")
	if d := mustTiming(t, rep, "recovery (broker ready to first success)"); d > recoverWithin {
		t.Fatalf("recovery %s", d)
	}
}

func TestEdgeKill(t *testing.T) {
	rep := runScenario(t, "edge-kill")
	v := victim(t, rep)
	if v.Outcome != string(wire.ErrAgentOffline) {
		t.Fatalf("call cut by the kill ended %s, want agent_offline (the broker publishes the killed agent's last will)", v.Outcome)
	}
	// The tool of the cut call sleeps 6 s: it must not have been waited for.
	if d := mustTiming(t, rep, "cut call ended (kill to typed error)"); d > heartbeatTimeout+time.Second {
		t.Fatalf("cut call ended %s after the kill", d)
	}
	mustTiming(t, rep, "recovery (kill to first success)")
	redelivered := 0
	for _, n := range rep.Notes {
		if strings.HasPrefix(n, "redelivered ") {
			redelivered++
		}
	}
	if redelivered != 2 {
		t.Fatalf("notes %q: want both redeliveries answered without running", rep.Notes)
	}
}

func TestNetworkCut(t *testing.T) {
	rep := runScenario(t, "network-cut")
	v := victim(t, rep)
	if v.Outcome != string(wire.ErrAgentOffline) {
		t.Fatalf("call cut by the network ended %s, want agent_offline", v.Outcome)
	}
	if d := mustTiming(t, rep, "offline detected (cut to offline)"); d < heartbeatTimeout-time.Second || d > 2*heartbeatTimeout {
		t.Fatalf("offline detected after %s, want about the heartbeat timeout %s", d, heartbeatTimeout)
	}
	mustTiming(t, rep, "kept report delivered (network back to arrival)")
	mustTiming(t, rep, "recovery (network back to first success)")
	fast := 0
	for _, c := range rep.Calls {
		if c.N > v.N && c.Outcome == string(wire.ErrAgentOffline) {
			fast++
		}
	}
	if fast < 3 {
		t.Fatalf("%d calls failed fast during the cut, want at least 3", fast)
	}
}

func TestUnknownScenario(t *testing.T) {
	_, err := Run(context.Background(), "no-such", Options{Binary: "evoclaw"})
	if !errors.Is(err, ErrUnknownScenario) {
		t.Fatalf("err %v", err)
	}
	if _, err := Run(context.Background(), "edge-kill", Options{}); err == nil || !strings.Contains(err.Error(), "Binary") {
		t.Fatalf("err %v, want Binary required", err)
	}
}

func TestOrchestratorKill(t *testing.T) {
	rep := runScenario(t, "orchestrator-kill")
	v := victim(t, rep)
	if v.Outcome != OutcomeNodeKilled {
		t.Fatalf("call cut by the kill ended %s", v.Outcome)
	}
	mustTiming(t, rep, "orchestrator restart (kill to ready)")
	mustTiming(t, rep, "recovery (kill to first success)")
	last := rep.Calls[len(rep.Calls)-1]
	if last.Outcome != "success" || last.History != last.N {
		t.Fatalf("last call %+v: want success having seen all %d user messages", last, last.N)
	}
	late := false
	for _, n := range rep.Notes {
		late = late || strings.Contains(n, v.Tag+" (") && strings.Contains(n, "late_result event only")
	}
	if !late {
		t.Fatalf("notes %q: the cut call's run is not joined through its late result", rep.Notes)
	}
}
