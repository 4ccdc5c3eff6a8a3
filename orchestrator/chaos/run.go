package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/pause"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
)

// Defaults of Options and the scenarios' timing.
const (
	// DefaultCalls is how many tool calls a scenario makes.
	DefaultCalls = 24
	// CallBound is the longest any chat may take: the mark tool's deadline
	// (8 s timeout plus the 2 s round trip) with room for the loop. A chat
	// still running at the bound counts as a hang.
	CallBound = 20 * time.Second
	// heartbeatInterval of the scenarios' agents, and heartbeatTimeout of
	// their orchestrator: silence for this long marks an agent offline.
	heartbeatInterval = time.Second
	heartbeatTimeout  = 4 * time.Second
	// shortRun is how long an ordinary call's tool sleeps.
	shortRun = 0.1
	// pace spaces calls that fail fast, so a stream does not spin.
	pace = 200 * time.Millisecond
	// poll is how often a condition is polled.
	poll = 20 * time.Millisecond
	// recoverWithin bounds the wait for the first successful call after a
	// fault is repaired.
	recoverWithin = 45 * time.Second
)

// Options configure a scenario run. Binary is required; the zero value of
// the rest is ready for use.
type Options struct {
	// Binary is the evoclaw executable whose `edge` and `broker` commands
	// run the child processes.
	Binary string
	// Calls is how many tool calls the stream makes before the fault and
	// after recovery, in all (default DefaultCalls; at least 6). The calls
	// made while the fault lasts and until the first success come on top.
	Calls int
	// Dir keeps the run's files (databases, logs, run log). Empty means a
	// temporary directory removed afterwards.
	Dir string
	// Out receives a line per step. Nil discards them.
	Out io.Writer
	// Logger receives the orchestrator's logs. Nil discards them.
	Logger *slog.Logger
}

// run is one scenario's state: its processes, its node and its calls.
type run struct {
	opts   Options
	dir    string
	skills string
	runLog string             // the mark tool's run log: one tag per execution
	node   *orchestrator.Node // nil when the node is a child process
	rep    *Report
	// audit is the node's audit database; chat and agentReady reach the
	// node, in this process or a child.
	audit string
	// audits, when set, are every node's audit database (node-kill), and
	// killedNodes the node ids the scenario killed.
	audits      []string
	killedNodes map[string]bool
	chat        func(ctx context.Context, conv, text string) (string, error)
	agentReady  func(ctx context.Context, id string) error
	// conv, if set, is the one conversation of every call.
	conv  string
	procs []*child.Process // stopped at the end
	nodes []*nodeChild     // their dispatchers are waited for at the end
	edges map[string]*edgeConf
	// cleanups run last at close, after the processes (etcd outlives the
	// nodes that leave it).
	cleanups []func()

	outMu sync.Mutex // serialises lines to opts.Out

	mu    sync.Mutex // guards calls and next
	calls []*Call
	next  int
	bg    sync.WaitGroup // calls started with goCall
}

// edgeConf is how an agent of the run is started (again).
type edgeConf struct {
	id, conf, dataDir, log string
}

// Call is one tool call the stream made: one chat whose model calls mark once.
type Call struct {
	// N numbers the calls of a run from 1.
	N int
	// Tag is what the mark tool logs for this call: "call-NNNN".
	Tag string
	// Conv is the conversation id of the chat; Agent the agent called.
	Conv  string
	Agent string
	// Seconds is how long the tool sleeps.
	Seconds float64
	// Start is when the chat began; Took how long until it answered.
	Start time.Time
	Took  time.Duration
	// Outcome is "success", the typed error ("agent_offline", "timeout",
	// ...), "untyped" for an error text without a type, or "hang" for a
	// chat still running at CallBound.
	Outcome string
	// Text is the answer, or the error of a chat that did not answer.
	Text string
	// History is how many user messages the model saw in the call's
	// conversation, this one included.
	History int
	// RequestID is read from the orchestrator's audit trail by the checks.
	RequestID string
}

func (r *run) say(format string, a ...any) {
	if r.opts.Out != nil {
		r.outMu.Lock()
		defer r.outMu.Unlock()
		fmt.Fprintf(r.opts.Out, format+"\n", a...)
	}
}

// startNode starts the orchestrator in this process. brokerURL empty means
// its embedded broker (loopback, anonymous clients allowed).
func (r *run) startNode(ctx context.Context, brokerURL string) error {
	cfg := nodeConfig(filepath.Join(r.dir, "orchestrator"), "127.0.0.1:0", brokerURL)
	log := r.opts.Logger
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	n, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Provider: driver{}, Logger: log})
	if err != nil {
		return fmt.Errorf("start orchestrator: %w", err)
	}
	r.node, r.audit = n, n.AuditPath()
	r.chat = func(ctx context.Context, conv, text string) (string, error) {
		ans, err := n.Chat(ctx, conv, text)
		if err != nil {
			return "", err
		}
		return ans.Text, nil
	}
	r.agentReady = func(ctx context.Context, id string) error {
		return waitFor(ctx, 30*time.Second, "agent "+id+" online with its tools", func() bool {
			a, ok := n.Catalog().Agents[id]
			return ok && a.Online && len(a.Tools) > 0
		})
	}
	return nil
}

// startBroker runs `evoclaw broker` on listen and returns its address.
func (r *run) startBroker(ctx context.Context, listen string) (*child.Process, string, error) {
	p, err := child.StartLogged("broker", r.opts.Binary, []string{"broker", "--listen", listen, "--allow-anonymous"},
		filepath.Join(r.dir, "broker.log"), child.Options{})
	if err != nil {
		return nil, "", err
	}
	r.procs = append(r.procs, p)
	line, err := p.WaitReady(ctx)
	if err != nil {
		return nil, "", err
	}
	addr, ok := strings.CutPrefix(line[strings.LastIndex(line, " ")+1:], "tcp://")
	if !ok {
		return nil, "", fmt.Errorf("broker ready line %q names no tcp:// address", line)
	}
	return p, addr, nil
}

// addEdge writes the configuration of agent id, connecting to brokerURL.
func (r *run) addEdge(id, brokerURL string) (*edgeConf, error) {
	dir := filepath.Join(r.dir, "agents", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	e := &edgeConf{id: id, conf: filepath.Join(dir, "agent.toml"), dataDir: filepath.Join(dir, "data"), log: filepath.Join(dir, "edge.log")}
	body := fmt.Sprintf("# Written by evoclaw chaos.\nagent_id = %q\ndata_dir = \"data\"\nheartbeat_interval = %q\n[mqtt]\nbroker = %q\n[skills]\ndirs = [%q]\n",
		id, heartbeatInterval.String(), brokerURL, r.skills)
	if err := os.WriteFile(e.conf, []byte(body), 0o600); err != nil {
		return nil, err
	}
	r.edges[id] = e
	return e, nil
}

// startEdge runs `evoclaw edge` for e and waits until it is ready.
func (r *run) startEdge(ctx context.Context, e *edgeConf) (*child.Process, error) {
	p, err := child.StartLogged("edge "+e.id, r.opts.Binary, []string{"edge", "--config", e.conf}, e.log, child.Options{})
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, p)
	if _, err := p.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("%w (see %s)", err, e.log)
	}
	return p, nil
}

// onlineEdge configures agent id on brokerURL, runs it, and waits until
// the orchestrator lists it online with its tools.
func (r *run) onlineEdge(ctx context.Context, id, brokerURL string) (*edgeConf, *child.Process, error) {
	e, err := r.addEdge(id, brokerURL)
	if err != nil {
		return nil, nil, err
	}
	p, err := r.startEdge(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	if err := r.waitAgent(ctx, e.id); err != nil {
		return nil, nil, err
	}
	return e, p, nil
}

// waitAgent waits until the orchestrator lists agent id online with tools.
func (r *run) waitAgent(ctx context.Context, id string) error {
	return r.agentReady(ctx, id)
}

// newCall numbers the next call.
func (r *run) newCall(agent string, seconds float64) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	conv := r.conv
	if conv == "" {
		conv = fmt.Sprintf("chaos-%04d", r.next)
	}
	c := &Call{N: r.next, Tag: fmt.Sprintf("call-%04d", r.next), Conv: conv, Agent: agent, Seconds: seconds}
	r.calls = append(r.calls, c)
	return c
}

// call makes one call and waits for its end.
func (r *run) call(ctx context.Context, agent string, seconds float64) *Call {
	c := r.newCall(agent, seconds)
	r.do(ctx, c)
	return c
}

// goCall starts one call; the channel yields it when it has ended.
func (r *run) goCall(ctx context.Context, agent string, seconds float64) (*Call, <-chan *Call) {
	c := r.newCall(agent, seconds)
	ch := make(chan *Call, 1)
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		r.do(ctx, c)
		ch <- c
	}()
	return c, ch
}

// errorType reads the error type from the loop's error text.
var errorType = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Error \(([a-z_]+)\)`) })

// historyMark reads the driver's count of user messages.
var historyMark = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[history (\d+)\]$`) })

// OutcomeNodeKilled is the outcome of a call whose orchestrator process
// was killed before it answered.
const OutcomeNodeKilled = "orchestrator_killed"

// OutcomeNodeLost is the outcome of a chat that the cluster node running
// its conversation did not answer because it died (node-kill).
const OutcomeNodeLost = "node_lost"

func (r *run) do(ctx context.Context, c *Call) {
	text, err := json.Marshal(order{Agent: c.Agent, Tag: c.Tag, File: r.runLog, Seconds: c.Seconds})
	if err != nil {
		panic(err) // plain fields always marshal
	}
	cctx, cancel := context.WithTimeout(ctx, CallBound+5*time.Second)
	defer cancel()
	start := time.Now()
	ans, err := r.chat(cctx, c.Conv, string(text))
	took := time.Since(start)
	outcome, out := "", ""
	switch {
	case errors.Is(err, errNodeKilled):
		outcome, out = OutcomeNodeKilled, err.Error()
	case err != nil:
		outcome, out = "hang", err.Error()
	case strings.HasPrefix(ans, "marked "+c.Tag):
		outcome, out = "success", ans
	default:
		out = ans
		outcome = "untyped"
		if m := errorType().FindStringSubmatch(ans); m != nil {
			outcome = m[1]
		}
	}
	history := 0
	if m := historyMark().FindStringSubmatch(ans); m != nil {
		history, _ = strconv.Atoi(m[1])
	}
	r.mu.Lock()
	c.Start, c.Took, c.Outcome, c.Text, c.History = start, took, outcome, out, history
	r.mu.Unlock()
	r.say("      %s %-8s %-13s after %s", c.Tag, c.Agent, outcome, took.Round(time.Millisecond))
}

// running reports whether the tool of c has started: its tag is in the
// run log.
func (r *run) running(c *Call) bool {
	b, err := os.ReadFile(r.runLog)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == c.Tag {
			return true
		}
	}
	return false
}

// waitRunning waits until c's tool has started.
func (r *run) waitRunning(ctx context.Context, c *Call) error {
	return waitFor(ctx, CallBound, c.Tag+" running on its agent", func() bool { return r.running(c) })
}

// calls makes n calls one after another.
func (r *run) callN(ctx context.Context, agent string, n int) {
	for range n {
		if ctx.Err() != nil {
			return
		}
		r.call(ctx, agent, shortRun)
	}
}

// untilSuccess makes calls, paced, until one succeeds, and returns when
// it ended.
func (r *run) untilSuccess(ctx context.Context, agent string) (time.Time, error) {
	deadline := time.Now().Add(recoverWithin)
	for time.Now().Before(deadline) {
		c := r.call(ctx, agent, shortRun)
		if c.Outcome == "success" {
			return c.Start.Add(c.Took), nil
		}
		if err := pause.For(ctx, pace); err != nil {
			return time.Time{}, err
		}
	}
	return time.Time{}, fmt.Errorf("no successful call on %s within %s", agent, recoverWithin)
}

// waitFor polls cond until it holds, within ends or ctx ends.
func waitFor(ctx context.Context, within time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %s", within, what)
		}
		if err := pause.For(ctx, poll); err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
	}
	return nil
}

// close stops everything the run started.
func (r *run) close() {
	r.bg.Wait()
	if r.node != nil {
		_ = r.node.Close()
	}
	for _, p := range r.procs {
		_ = p.Stop()
	}
	for _, nc := range r.nodes {
		<-nc.done
	}
	for _, f := range r.cleanups {
		f()
	}
}
