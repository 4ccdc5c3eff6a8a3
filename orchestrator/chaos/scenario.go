package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/evoclaw/evoclaw/edge/defaults"
)

// Scenario is one fault scenario.
type Scenario struct {
	// Name is what `evoclaw chaos NAME` and Run take.
	Name string
	// Summary says in one line what the fault is.
	Summary string
	run     func(ctx context.Context, r *run) error
}

// Scenarios lists every scenario, in the order `evoclaw chaos list` shows them.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "broker-restart", Summary: "the MQTT broker (a child process) is SIGKILLed mid-call and restarted on the same port", run: brokerRestart},
		{Name: "edge-kill", Summary: "an edge agent is SIGKILLed mid-call and restarted on the same data directory; the cut command is redelivered", run: edgeKill},
		{Name: "network-cut", Summary: "the network between an agent and the broker drops every packet, then comes back", run: networkCut},
		{Name: "node-kill", Summary: "one of three clustered orchestrators (etcd, one broker, sqld), owner of the conversation, is SIGKILLed mid-call and restarted", run: nodeKill},
		{Name: "orchestrator-kill", Summary: "the orchestrator process is SIGKILLed mid-conversation and restarted on the same data directory", run: orchestratorKill},
	}
}

// ErrUnknownScenario is returned by Run for a name Scenarios does not list.
var ErrUnknownScenario = errors.New("unknown chaos scenario")

// Run runs the scenario called name. It returns the report, whose Problems
// say which checks failed, or an error when the scenario could not be
// carried out (a process did not start, a step timed out).
func Run(ctx context.Context, name string, o Options) (*Report, error) {
	var sc *Scenario
	for _, s := range Scenarios() {
		if s.Name == name {
			sc = &s
		}
	}
	if sc == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownScenario, name)
	}
	if o.Binary == "" {
		return nil, errors.New("chaos: Options.Binary is required")
	}
	defaults.Positive(&o.Calls, DefaultCalls)
	o.Calls = max(o.Calls, 6)
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "evoclaw-chaos-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r := &run{opts: o, dir: dir, runLog: filepath.Join(dir, "runs.log"), rep: &Report{Scenario: name}, edges: map[string]*edgeConf{}}
	defer r.close()
	if r.skills, err = installSkill(filepath.Join(dir, "skills")); err != nil {
		return nil, err
	}
	r.say("evoclaw chaos %s: %s", name, sc.Summary)
	r.say("  files in %s", dir)
	began := time.Now()
	if err := sc.run(ctx, r); err != nil {
		r.rep.Aborted = err.Error()
		return r.rep, fmt.Errorf("%s: %w", name, err)
	}
	if err := r.check(ctx); err != nil {
		r.rep.Aborted = "check: " + err.Error()
		return r.rep, fmt.Errorf("%s: check: %w", name, err)
	}
	r.rep.time("whole scenario", time.Since(began))
	return r.rep, nil
}

// split divides the stream: calls before the fault, and at least three
// after recovery.
func split(calls int) (before, after int) {
	before = max(calls/3, 2)
	return before, max(calls-before-2, 3)
}
