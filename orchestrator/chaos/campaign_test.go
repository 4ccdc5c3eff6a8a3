package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// The crash campaign: a real `evoclaw serve` and a real `evoclaw edge`
// (its MQTT connection through a Proxy) are hit with a random fault per
// iteration while chats run through the node's HTTP API, each calling a
// process tool that appends a unique tag to a file (on the agent or on the
// node itself). After each iteration everything killed is started again
// and the promises are checked: every call the API answered is in the
// node's trail, a call answered done ran exactly once and is in the
// agent's trail under the same request_id, no tool ran twice, every run
// is audited once by the side that ran it, both hash chains verify, every
// answered chat is stored and the model of a later chat sees it, and the
// agent comes back online by itself.

// Environment of the campaign.
const (
	// campaignItersEnv sets the number of iterations (default
	// campaignDefaultIters).
	campaignItersEnv = "EVOCLAW_CHAOS_CAMPAIGN"
	// campaignSeedEnv replays the campaign of a seed.
	campaignSeedEnv = "EVOCLAW_CHAOS_SEED"
	// campaignFaultsEnv restricts the faults to a comma-separated list.
	campaignFaultsEnv = "EVOCLAW_CHAOS_FAULTS"

	campaignDefaultIters = 3
	campaignAgent        = "camp-a"
	campaignConvs        = 6
	// campaignChatBound is the client's bound on one chat: the node's
	// chat timeout (CallBound) and some.
	campaignChatBound = CallBound + 10*time.Second
	// campaignStart bounds a start of the node or the agent.
	campaignStart = 30 * time.Second
	// campaignEventually bounds what may lag behind a restart: an
	// interrupted run audited, a kept result delivered.
	campaignEventually = 20 * time.Second
	// campaignPortLow and campaignPortHigh bound the ports the node
	// listens on (fixed across its restarts).
	campaignPortLow, campaignPortHigh = 34000, 34999
)

// campaignFaults are the faults an iteration draws from.
var campaignFaults = []string{
	"calm", "node-kill", "agent-kill", "both-kill", "node-term-kill", "agent-term-kill",
	"node-startup-kill", "agent-startup-kill", "agent-stop", "net-drop", "net-slow", "net-reset",
	"node-kill-on-answer", "agent-kill-on-answer", "node-stop", "client-leave", "storm",
}

type campaign struct {
	t    *testing.T
	rng  *rand.Rand
	seed int64
	bin  string
	dir  string

	nodeConf, nodeData   string
	agentConf, agentData string
	skills, runLog       string
	api, token           string
	proxy                *Proxy

	node, agent *child.Process // nil while down
	stopped     bool           // the agent is SIGSTOPped
	leave       func()         // the clients of the iteration's chats give up

	convs    []string
	answered map[string]int // chats answered 200 per conversation
	chats    []*campaignChat
	stats    map[string]int
	recovery []time.Duration
	problems []string
}

// campaignChat is one chat of the campaign: one call of the mark tool.
type campaignChat struct {
	iter      int
	fault     string
	tag, conv string
	agent     bool // the agent's mark, else the node's own
	order     string
	before    int // chats of conv answered 200 before this one began
	ans       chatAnswer
	// unaudited names the sides whose trail did not have the call when
	// the answer came.
	unaudited []string
}

// done reports whether the API acknowledged the call as run to its end.
func (c *campaignChat) done() bool {
	return c.ans.Status == 200 && len(c.ans.Body.Calls) == 1 && c.ans.Body.Calls[0].Success &&
		strings.HasPrefix(c.ans.Body.Text, "marked "+c.tag)
}

func TestCrashCampaign(t *testing.T) {
	iters := campaignDefaultIters
	if s := os.Getenv(campaignItersEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of iterations", campaignItersEnv, s)
		}
		iters = n
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv(campaignSeedEnv); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an integer", campaignSeedEnv, s)
		}
		seed = n
	}
	faults := campaignFaults
	if s := os.Getenv(campaignFaultsEnv); s != "" {
		faults = strings.Split(s, ",")
		for _, f := range faults {
			if !slices.Contains(campaignFaults, f) {
				t.Fatalf("%s: unknown fault %q (known: %s)", campaignFaultsEnv, f, strings.Join(campaignFaults, ","))
			}
		}
	}
	t.Logf("crash campaign: seed %d, %d iterations (replay: %s=%d %s=%d)", seed, iters, campaignSeedEnv, seed, campaignItersEnv, iters)
	c := newCampaign(t, seed)
	ctx := t.Context()
	c.startNode(ctx)
	c.startAgent(ctx)
	c.recover(ctx, 0)
	for i := 1; i <= iters; i++ {
		fault := faults[c.rng.Intn(len(faults))]
		c.iterate(ctx, i, fault)
		if len(c.problems) > 0 {
			break // replay with the seed; later iterations would only add noise
		}
	}
	if len(c.problems) == 0 {
		// Nothing acknowledged early may be lost to a later crash.
		for _, v := range c.violations(ctx, c.chats) {
			c.problem("at the end: %s", v)
		}
	}
	c.verifyChains(ctx)
	c.report()
}

func newCampaign(t *testing.T, seed int64) *campaign {
	c := &campaign{t: t, rng: rand.New(rand.NewSource(seed)), seed: seed, bin: evoclawBinary(t), dir: t.TempDir(),
		answered: map[string]int{}, stats: map[string]int{}}
	var err error
	if c.skills, err = installSkill(filepath.Join(c.dir, "skills")); err != nil {
		t.Fatal(err)
	}
	c.runLog = filepath.Join(c.dir, "runs.log")
	for i := range campaignConvs {
		c.convs = append(c.convs, fmt.Sprintf("camp-%d-%d", seed%100000, i))
	}
	brokerPort, httpPort := c.freePort(), c.freePort()
	for httpPort == brokerPort {
		httpPort = c.freePort()
	}
	model := startFakeModel(t)
	proxy, err := StartProxy(fmt.Sprintf("127.0.0.1:%d", brokerPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	c.proxy = proxy
	c.nodeData, c.agentData = filepath.Join(c.dir, "node"), filepath.Join(c.dir, "agent")
	c.api = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	c.nodeConf = filepath.Join(c.dir, "evoclaw.toml")
	c.agentConf = filepath.Join(c.dir, "agent.toml")
	node := fmt.Sprintf(`node_id = "campaign"
data_dir = %q
[broker]
listen = "127.0.0.1:%d"
allow_anonymous = true
[http]
listen = "127.0.0.1:%d"
[llm]
provider = "openai"
base_url = %q
model = "campaign"
probe = "off"
text_tool_calls = "off"
[loop]
heartbeat_timeout = %q
chat_timeout = %q
[skills]
dirs = [%q]
`, c.nodeData, brokerPort, httpPort, model, heartbeatTimeout.String(), CallBound.String(), c.skills)
	agent := fmt.Sprintf(`agent_id = %q
data_dir = %q
heartbeat_interval = %q
[mqtt]
broker = "tcp://%s"
[skills]
dirs = [%q]
`, campaignAgent, c.agentData, heartbeatInterval.String(), c.proxy.Addr(), c.skills)
	for path, body := range map[string]string{c.nodeConf: node, c.agentConf: agent} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if c.stopped && c.agent != nil {
			_ = syscall.Kill(c.agent.Pid(), syscall.SIGCONT)
		}
		for _, p := range []*child.Process{c.node, c.agent} {
			if p != nil {
				_ = p.Kill()
			}
		}
		if t.Failed() {
			for _, name := range []string{"node.log", "agent.log"} {
				b, _ := os.ReadFile(filepath.Join(c.dir, name))
				t.Logf("%s (tail):\n%s", name, tailString(string(b), 6000))
			}
		}
	})
	return c
}

// freePort picks a free loopback port in the campaign's range.
func (c *campaign) freePort() int {
	for range 200 {
		p := campaignPortLow + c.rng.Intn(campaignPortHigh-campaignPortLow+1)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			ln.Close()
			return p
		}
	}
	c.t.Fatalf("no free port in %d-%d", campaignPortLow, campaignPortHigh)
	return 0
}

func (c *campaign) problem(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	c.problems = append(c.problems, msg)
	c.t.Logf("VIOLATION (seed %d): %s", c.seed, msg)
}

// spawn starts the node or the agent without waiting for it.
func (c *campaign) spawn(node bool) *child.Process {
	name, args, log := "edge", []string{"edge", "--config", c.agentConf}, "agent.log"
	if node {
		name, args, log = "node", []string{"serve", "--config", c.nodeConf}, "node.log"
	}
	p, err := child.StartLogged(name, c.bin, args, filepath.Join(c.dir, log), child.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// startNode starts the node and waits until its API answers.
func (c *campaign) startNode(ctx context.Context) {
	c.node = c.waitStarted(ctx, c.spawn(true))
	if c.token == "" {
		b, err := os.ReadFile(filepath.Join(c.nodeData, "http-token"))
		if err != nil {
			c.t.Fatal(err)
		}
		c.token = strings.TrimSpace(string(b))
	}
}

func (c *campaign) startAgent(ctx context.Context) {
	c.agent = c.waitStarted(ctx, c.spawn(false))
}

func (c *campaign) waitStarted(ctx context.Context, p *child.Process) *child.Process {
	wctx, cancel := context.WithTimeout(ctx, campaignStart)
	defer cancel()
	if _, err := p.WaitReady(wctx); err != nil {
		_ = p.Kill()
		c.problem("%s does not start again: %v", p.Name, err)
		c.t.FailNow()
	}
	return p
}

// kill SIGKILLs a process if it runs.
func (c *campaign) kill(p **child.Process, what string) {
	if *p == nil {
		return
	}
	if *p == c.agent && c.stopped {
		c.stopped = false // a stopped process dies of SIGKILL all the same
	}
	_ = (*p).Kill()
	*p = nil
	c.stats["kill "+what]++
}

// termKill sends SIGTERM, then SIGKILL after a random delay: a kill during
// the shutdown.
func (c *campaign) termKill(p **child.Process, what string) {
	if *p == nil {
		return
	}
	_ = syscall.Kill((*p).Pid(), syscall.SIGTERM)
	time.Sleep(c.randDelay())
	c.kill(p, what+" (in its shutdown)")
}

// startupKill starts the process again and SIGKILLs it a random moment
// into its start.
func (c *campaign) startupKill(p **child.Process, node bool, what string) {
	c.kill(p, what)
	q := c.spawn(node)
	time.Sleep(c.randDelay())
	_ = q.Kill()
	c.stats["kill "+what+" (in its start)"]++
}

// randDelay is a delay between 1 µs and 1 s, uniform in its logarithm.
func (c *campaign) randDelay() time.Duration {
	return time.Duration(math.Pow(10, c.rng.Float64()*6)) * time.Microsecond
}

// randSpan is a random span between lo and hi.
func (c *campaign) randSpan(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.rng.Int63n(int64(hi-lo)+1))
}

// iterate runs one iteration: chats, a fault at a random moment, restarts
// and checks.
func (c *campaign) iterate(ctx context.Context, iter int, fault string) {
	c.stats["fault "+fault]++
	n := 1 + c.rng.Intn(3)
	convs := slices.Clone(c.convs)
	c.rng.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	var chats []*campaignChat
	for k := range n {
		chats = append(chats, c.newChat(iter, fault, fmt.Sprintf("i%d-c%d", iter, k), convs[k], c.rng.Intn(4) != 0))
	}
	seconds := []float64{0, 0.02, 0.2, 0.6}
	var wg sync.WaitGroup
	cctx, leave := context.WithCancel(ctx)
	defer leave()
	c.leave = leave
	// first is closed when the first chat has its answer (or none).
	first, once := make(chan struct{}), sync.Once{}
	for _, ch := range chats {
		s := seconds[c.rng.Intn(len(seconds))]
		ch.order = c.order(ch, s)
		wg.Go(func() {
			c.chat(cctx, ch)
			once.Do(func() { close(first) })
		})
	}
	var delay time.Duration
	if strings.HasSuffix(fault, "-on-answer") {
		// The moment after an acknowledgment: what was acknowledged
		// must survive the kill.
		<-first
		delay = time.Duration(math.Pow(10, c.rng.Float64()*3)) * time.Microsecond
	} else {
		delay = c.randDelay()
	}
	time.Sleep(delay)
	detail := c.strike(fault)
	wg.Wait()
	var outcomes []string
	for _, ch := range chats {
		outcomes = append(outcomes, fmt.Sprintf("%s@%s=%s", ch.tag, map[bool]string{true: "agent", false: "node"}[ch.agent], ch.outcome()))
	}
	killed := c.node == nil || c.agent == nil
	c.restart(ctx)
	c.recover(ctx, iter)
	c.t.Logf("iteration %d: %s after %s%s: %s; recovered in %s", iter, fault, delay.Round(time.Microsecond), detail,
		strings.Join(outcomes, " "), c.recovery[len(c.recovery)-1].Round(time.Millisecond))
	c.check(ctx, chats)
	if killed {
		c.verifyChains(ctx)
	}
}

func (c *campaign) newChat(iter int, fault, tag, conv string, agent bool) *campaignChat {
	// The final "." keeps one tag from being the start of another
	// (i1-r1 and i1-r10) where the checks look for it in a text.
	ch := &campaignChat{iter: iter, fault: fault, tag: fmt.Sprintf("s%d-%s.", c.seed%100000, tag), conv: conv, agent: agent, before: c.answered[conv]}
	c.chats = append(c.chats, ch)
	return ch
}

func (c *campaign) order(ch *campaignChat, seconds float64) string {
	tool := markTool
	if ch.agent {
		tool = campaignAgent + "__" + markTool
	}
	b, _ := json.Marshal(campaignOrder{Tool: tool, Tag: ch.tag, File: c.runLog, Seconds: seconds}) // plain fields always marshal
	return string(b)
}

func (c *campaign) chat(ctx context.Context, ch *campaignChat) {
	cctx, cancel := context.WithTimeout(ctx, campaignChatBound)
	defer cancel()
	ch.ans = postChat(cctx, c.api, c.token, ch.conv, ch.order)
	// Audited before acknowledged: the rows are there the moment the
	// answer is, on the node for any call it answered, on the agent too
	// for a call answered done.
	if ch.ans.Status == 0 || len(ch.ans.Body.Calls) == 0 {
		return
	}
	if rows, err := tagRows(ctx, filepath.Join(c.nodeData, "audit.db"), ch.tag); err == nil && len(rows) == 0 {
		ch.unaudited = append(ch.unaudited, "node")
	}
	if ch.agent && ch.done() {
		if rows, err := tagRows(ctx, filepath.Join(c.agentData, "audit.db"), ch.tag); err == nil && len(rows) == 0 {
			ch.unaudited = append(ch.unaudited, "agent")
		}
	}
}

// outcome names how a chat ended, for the log and the counts.
func (ch *campaignChat) outcome() string {
	switch {
	case ch.ans.Status == 0:
		return "unanswered"
	case ch.done():
		return "done"
	case ch.ans.Status != 200:
		if ch.ans.Body.Error != nil {
			return fmt.Sprintf("%d-%s", ch.ans.Status, ch.ans.Body.Error.Type)
		}
		return strconv.Itoa(ch.ans.Status)
	case len(ch.ans.Body.Calls) == 1:
		if m := errorType().FindStringSubmatch(ch.ans.Body.Calls[0].Error); m != nil {
			return m[1]
		}
		return "error: " + tailString(ch.ans.Body.Calls[0].Error[:min(len(ch.ans.Body.Calls[0].Error), 60)], 60)
	}
	return "no-call"
}

// strike applies the fault and says what it did.
func (c *campaign) strike(fault string) string {
	switch fault {
	case "storm":
		// Two or three faults in a row, each a random moment after the
		// start of what the one before killed.
		var did []string
		basic := campaignFaults[1:12]
		for k := range 2 + c.rng.Intn(2) {
			if k > 0 {
				c.restart(c.t.Context())
				time.Sleep(c.randDelay())
			}
			f := basic[c.rng.Intn(len(basic))]
			did = append(did, f+c.strike(f))
		}
		return " (" + strings.Join(did, ", ") + ")"
	case "calm":
	case "node-kill", "node-kill-on-answer":
		c.kill(&c.node, "node")
	case "agent-kill", "agent-kill-on-answer":
		c.kill(&c.agent, "agent")
	case "both-kill":
		if c.rng.Intn(2) == 0 {
			c.kill(&c.node, "node")
			c.kill(&c.agent, "agent")
		} else {
			c.kill(&c.agent, "agent")
			c.kill(&c.node, "node")
		}
	case "node-term-kill":
		c.termKill(&c.node, "node")
	case "agent-term-kill":
		c.termKill(&c.agent, "agent")
	case "node-startup-kill":
		c.startupKill(&c.node, true, "node")
	case "agent-startup-kill":
		c.startupKill(&c.agent, false, "agent")
	case "agent-stop":
		d := c.randSpan(50*time.Millisecond, 6*time.Second)
		_ = syscall.Kill(c.agent.Pid(), syscall.SIGSTOP)
		c.stopped = true
		time.Sleep(d)
		_ = syscall.Kill(c.agent.Pid(), syscall.SIGCONT)
		c.stopped = false
		c.stats["stop agent"]++
		return fmt.Sprintf(" (stopped %s)", d.Round(time.Millisecond))
	case "node-stop":
		d := c.randSpan(50*time.Millisecond, 6*time.Second)
		_ = syscall.Kill(c.node.Pid(), syscall.SIGSTOP)
		time.Sleep(d)
		_ = syscall.Kill(c.node.Pid(), syscall.SIGCONT)
		c.stats["stop node"]++
		return fmt.Sprintf(" (stopped %s)", d.Round(time.Millisecond))
	case "client-leave":
		c.leave()
	case "net-drop":
		d := c.randSpan(50*time.Millisecond, 6*time.Second)
		c.proxy.Cut()
		time.Sleep(d)
		c.proxy.Restore()
		c.stats["network fault"]++
		return fmt.Sprintf(" (dropped %s)", d.Round(time.Millisecond))
	case "net-slow":
		d, lag := c.randSpan(200*time.Millisecond, 4*time.Second), c.randSpan(time.Millisecond, 300*time.Millisecond)
		c.proxy.Slow(lag)
		time.Sleep(d)
		c.proxy.Slow(0)
		c.stats["network fault"]++
		return fmt.Sprintf(" (%s per chunk for %s)", lag.Round(time.Millisecond), d.Round(time.Millisecond))
	case "net-reset":
		c.proxy.Reset()
		c.stats["network fault"]++
	default:
		c.t.Fatalf("unknown fault %q", fault)
	}
	return ""
}

// restart starts whatever the fault left down.
func (c *campaign) restart(ctx context.Context) {
	if c.node == nil {
		c.startNode(ctx)
	}
	if c.agent == nil {
		c.startAgent(ctx)
	}
}

// recover waits until a chat calling the agent's tool is done: the agent
// reconnected and the node listed it again, by themselves.
func (c *campaign) recover(ctx context.Context, iter int) {
	start := time.Now()
	deadline := start.Add(recoverWithin)
	for k := 0; ; k++ {
		ch := c.newChat(iter, "recovery", fmt.Sprintf("i%d-r%d", iter, k), c.convs[c.rng.Intn(len(c.convs))], true)
		ch.order = c.order(ch, 0)
		c.chat(ctx, ch)
		c.count(ch)
		if ch.done() {
			c.recovery = append(c.recovery, time.Since(start))
			c.check(ctx, []*campaignChat{ch})
			return
		}
		if time.Now().After(deadline) {
			c.problem("iteration %d: no chat done on the agent within %s of the restart (last: %s %s)", iter, recoverWithin, ch.outcome(), ch.ans.Err)
			c.t.FailNow()
		}
		time.Sleep(pace)
	}
}

// count adds a chat's end to the counts and the conversation's answers.
func (c *campaign) count(ch *campaignChat) {
	c.stats["chat "+ch.outcome()]++
	c.stats["chats"]++
	if ch.ans.Status == 200 {
		c.answered[ch.conv]++
	}
}

// historyCount reads the fake model's count of user messages.
var historyCount = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[history (\d+)\]$`) })

// check verifies the promises for chats whose iteration ended: what can
// lag behind a restart is given campaignEventually.
func (c *campaign) check(ctx context.Context, chats []*campaignChat) {
	for _, ch := range chats {
		if ch.fault != "recovery" {
			c.count(ch)
		}
	}
	var left []string
	deadline := time.Now().Add(campaignEventually)
	for {
		left = c.violations(ctx, chats)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, v := range left {
		c.problem("%s", v)
	}
}

// tagRow is one tool_calls row of a tag.
type tagRow struct{ requestID, status, errorType string }

func tagRows(ctx context.Context, db, tag string) ([]tagRow, error) {
	res, err := queryDB(ctx, db, `SELECT request_id, status, coalesce(error_type, '') FROM tool_calls WHERE json_extract(params, '$.tag') = ?`, tag)
	if err != nil {
		return nil, err
	}
	var out []tagRow
	for _, r := range res {
		out = append(out, tagRow{str(r[0]), str(r[1]), str(r[2])})
	}
	return out, nil
}

// violations lists what does not hold (yet) for chats.
func (c *campaign) violations(ctx context.Context, chats []*campaignChat) []string {
	var out []string
	runs, err := runCounts(c.runLog)
	if err != nil {
		return []string{err.Error()}
	}
	nodeDB, agentDB := filepath.Join(c.nodeData, "audit.db"), filepath.Join(c.agentData, "audit.db")
	// Every chat has ended and its tool too (the longest sleeps 0.6 s):
	// no run may stay running in a request log, where it would never be
	// audited.
	for side, db := range map[string]string{"node": nodeDB, "agent": agentDB} {
		rows, err := queryDB(ctx, db, `SELECT request_id, tool, json_extract(params, '$.tag') FROM request_log WHERE state = 'running'`)
		if err != nil {
			out = append(out, fmt.Sprintf("%s's request log: %v", side, err))
		} else if len(rows) > 0 {
			out = append(out, fmt.Sprintf("runs still running in the %s's request log after the chats ended: %v", side, rows))
		}
	}
	for _, ch := range chats {
		where := fmt.Sprintf("iteration %d (%s), %s in %s on the %s", ch.iter, ch.fault, ch.tag, ch.conv, map[bool]string{true: "agent", false: "node"}[ch.agent])
		nodeRows, err := tagRows(ctx, nodeDB, ch.tag)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: node trail: %v", where, err))
			continue
		}
		agentRows, err := tagRows(ctx, agentDB, ch.tag)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: agent trail: %v", where, err))
			continue
		}
		if len(ch.unaudited) > 0 {
			out = append(out, fmt.Sprintf("%s: answered %s before it was in the trail of the %s", where, ch.outcome(), strings.Join(ch.unaudited, " and ")))
		}
		ran := runs[ch.tag]
		if ran > 1 {
			out = append(out, fmt.Sprintf("%s: the tool ran %d times", where, ran))
		}
		if len(nodeRows) > 1 || len(agentRows) > 1 {
			out = append(out, fmt.Sprintf("%s: audited %d times on the node, %d on the agent", where, len(nodeRows), len(agentRows)))
		}
		if !ch.agent && len(agentRows) > 0 {
			out = append(out, fmt.Sprintf("%s: a call of the node's own tool is in the agent's trail", where))
		}
		// Every run is audited by the side that ran it.
		side := nodeRows
		if ch.agent {
			side = agentRows
		}
		if ran == 1 && len(side) == 0 {
			out = append(out, fmt.Sprintf("%s: the tool ran but the side that ran it has no tool_calls row", where))
		}
		if ch.ans.Status != 0 && len(ch.ans.Body.Calls) > 0 && len(nodeRows) == 0 {
			out = append(out, fmt.Sprintf("%s: answered %s but not in the node's trail", where, ch.outcome()))
		}
		if ch.ans.Status == 200 {
			if n, err := queryDB(ctx, nodeDB, `SELECT count(*) FROM messages WHERE conversation_id = ? AND role = 'user' AND instr(body, ?) > 0`, ch.conv, ch.tag); err != nil || len(n) != 1 || n[0][0] != int64(1) {
				out = append(out, fmt.Sprintf("%s: answered, but its user message is not stored once in the conversation (%v %v)", where, n, err))
			}
		}
		if !ch.done() {
			continue
		}
		if ran != 1 {
			out = append(out, fmt.Sprintf("%s: answered done but the tool ran %d times", where, ran))
		}
		if len(nodeRows) != 1 || nodeRows[0].status != "success" {
			out = append(out, fmt.Sprintf("%s: answered done, node's rows %+v", where, nodeRows))
		} else if ch.agent && (len(agentRows) != 1 || agentRows[0].status != "success" || agentRows[0].requestID != nodeRows[0].requestID) {
			out = append(out, fmt.Sprintf("%s: answered done, node's row %+v, agent's rows %+v", where, nodeRows[0], agentRows))
		}
		m := historyCount().FindStringSubmatch(ch.ans.Body.Text)
		if m == nil {
			out = append(out, fmt.Sprintf("%s: answer %q has no history count", where, ch.ans.Body.Text))
		} else if n, _ := strconv.Atoi(m[1]); n < ch.before+1 {
			out = append(out, fmt.Sprintf("%s: the model saw %d user messages, want at least %d (answered chats of the conversation lost)", where, n, ch.before+1))
		}
	}
	return out
}

// queryDB runs a read-only query on an audit database.
func queryDB(ctx context.Context, db, q string, args ...any) ([][]any, error) {
	res, err := sqlite.QueryReadOnly(ctx, db, q, args...)
	if err != nil {
		return nil, err
	}
	return res.Rows, nil
}

// runCounts counts the lines of each tag in the run log.
func runCounts(path string) (map[string]int, error) {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	out := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out[l]++
		}
	}
	return out, nil
}

// verifyChains runs `evoclaw audit verify` on both trails.
func (c *campaign) verifyChains(ctx context.Context) {
	for _, dir := range []string{c.nodeData, c.agentData} {
		out, err := exec.CommandContext(ctx, c.bin, "audit", "verify", "--data-dir", dir).CombinedOutput()
		c.stats["audit verify"]++
		if err != nil {
			c.problem("audit verify %s: %v\n%s", filepath.Base(dir), err, out)
		}
	}
}

// report logs the campaign's numbers and fails the test on a violation.
func (c *campaign) report() {
	keys := make([]string, 0, len(c.stats))
	for k := range c.stats {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-40s %d", k, c.stats[k])
	}
	rec := slices.Clone(c.recovery)
	slices.Sort(rec)
	if len(rec) > 0 {
		fmt.Fprintf(&b, "\n  recovery to a done chat: median %s, max %s", rec[len(rec)/2].Round(time.Millisecond), rec[len(rec)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\n  violations %d", len(c.problems))
	c.t.Logf("crash campaign seed %d:%s", c.seed, b.String())
	for _, p := range c.problems {
		c.t.Errorf("seed %d: %s", c.seed, p)
	}
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
