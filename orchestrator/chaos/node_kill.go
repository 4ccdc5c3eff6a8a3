package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	_ "github.com/tursodatabase/libsql-client-go/libsql" // the cluster's sqld

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
)

// clusterWait bounds what a cluster takes to see a member join or leave:
// a killed node's etcd lease (3 s) expires and the watch tells the rest.
const clusterWait = 60 * time.Second

// clusterNodes is how many nodes node-kill runs.
const clusterNodes = 3

// SQLDEnv names the sqld binary for node-kill when it is not on PATH.
const SQLDEnv = "EVOCLAW_SQLD"

// clusterRun is node-kill's cluster: its peers and nodes.
type clusterRun struct {
	r         *run
	etcd      string // client address
	stateURL  string // sqld
	brokerURL string
	ports     []int // each node's actor port, kept across its restart
	mu        sync.Mutex
	nodes     []*nodeChild // nil while a node is down
}

// nodeKill: three orchestrators form a cluster (etcd membership, one
// broker, histories in sqld). The node owning the conversation is
// SIGKILLed while its call runs on the agent: the chat forwarded to it
// must end node_lost, the call must not run again, the others must see
// the node leave, and the conversation must go on from its stored
// history on another node, then on the killed node once it returns.
func nodeKill(ctx context.Context, r *run) error {
	before, after := split(r.opts.Calls)
	r.conv = "chaos-cluster"
	cr := &clusterRun{r: r, nodes: make([]*nodeChild, clusterNodes)}
	var err error
	if cr.etcd, err = cr.startEtcd(ctx); err != nil {
		return err
	}
	if cr.stateURL, err = cr.startSQLD(ctx); err != nil {
		return err
	}
	_, addr, err := r.startBroker(ctx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	cr.brokerURL = "tcp://" + addr
	r.killedNodes = map[string]bool{}
	for i := range clusterNodes {
		port, err := cluster.FreeLoopbackPort()
		if err != nil {
			return err
		}
		cr.ports = append(cr.ports, port)
		r.audits = append(r.audits, filepath.Join(cr.dir(i), orchestrator.AuditFile))
		if err := cr.start(ctx, i); err != nil {
			return err
		}
	}
	if err := cr.waitMembers(ctx, clusterNodes); err != nil {
		return err
	}
	r.chat = cr.chat(-1)
	r.agentReady = func(ctx context.Context, id string) error {
		for _, nc := range cr.alive() {
			if err := nc.waitAgent(ctx, id); err != nil {
				return err
			}
		}
		return nil
	}
	e, p, err := r.onlineEdge(ctx, "chaos-c", cr.brokerURL)
	if err != nil {
		return err
	}
	r.say("[1/6] etcd %s, sqld %s, broker %s; %d nodes; agent %s pid %d; %d calls in conversation %s through every node",
		cr.etcd, cr.stateURL, cr.brokerURL, clusterNodes, e.id, p.Pid(), before, r.conv)
	r.callN(ctx, e.id, before)

	owner, err := cr.owner(ctx)
	if err != nil {
		return err
	}
	victimID := nodeID(owner)
	r.chat = cr.chat(owner) // the chats go through the other nodes
	victim, done := r.goCall(ctx, e.id, 2*victimRun)
	if err := r.waitRunning(ctx, victim); err != nil {
		return err
	}
	killed := time.Now()
	cr.mu.Lock()
	nc := cr.nodes[owner]
	cr.nodes[owner] = nil
	cr.mu.Unlock()
	r.killedNodes[victimID] = true
	if err := nc.p.Kill(); err != nil {
		return err
	}
	r.say("[2/6] %s, owner of the conversation, SIGKILLed while %s runs on the agent", victimID, victim.Tag)
	<-done
	if victim.Outcome != OutcomeNodeLost {
		r.rep.problem("%s, cut by the kill, ended %s, want %s", victim.Tag, victim.Outcome, OutcomeNodeLost)
	}
	if err := cr.waitMembers(ctx, clusterNodes-1); err != nil {
		r.rep.problem("the others do not see %s leave: %v", victimID, err)
		return nil
	}
	left := time.Now()
	r.rep.time("node leaves the others' membership (kill to gone)", left.Sub(killed))
	r.say("[3/6] the other nodes see %s gone after %s", victimID, left.Sub(killed).Round(time.Millisecond))
	ok, err := r.untilSuccess(ctx, e.id)
	if err != nil {
		r.rep.problem("%v", err)
		return nil
	}
	r.rep.time("recovery (kill to first success on another node)", ok.Sub(killed))
	if now, err := cr.owner(ctx); err == nil && now != owner {
		r.rep.note("the conversation went on on %s", nodeID(now))
	}
	r.say("[4/6] the conversation answers on another node; %d calls", after/2)
	r.callN(ctx, e.id, after/2)

	if err := cr.start(ctx, owner); err != nil {
		return err
	}
	back := time.Now()
	if err := cr.waitMembers(ctx, clusterNodes); err != nil {
		r.rep.problem("%s restarted but the cluster does not have it back: %v", victimID, err)
		return nil
	}
	r.rep.time("restarted node back in every node's membership", time.Since(back))
	r.chat = cr.chat(-1)
	r.say("[5/6] %s restarted and back in the cluster; %d more calls through every node", victimID, after-after/2)
	r.callN(ctx, e.id, after-after/2)

	r.say("[6/6] checking the conversation's history")
	for _, c := range r.callsAfter(ok) {
		if c.Outcome != "success" {
			r.rep.problem("%s after recovery: %s", c.Tag, c.Outcome)
		}
		// The calls before the kill were all answered: the model must
		// see at least their user messages and this one.
		if c.Outcome == "success" && c.History < before+1 {
			r.rep.problem("%s: the model saw %d user messages of the conversation, want at least %d (history lost with its node)", c.Tag, c.History, before+1)
		}
	}
	if calls := r.callsAfter(ok); len(calls) > 0 {
		r.rep.note("after the kill the model saw the conversation's history: %d user messages at the last call", calls[len(calls)-1].History)
	}
	var sum cluster.ReportCounts
	for _, nc := range cr.alive() {
		rc, err := nc.reports(ctx)
		if err != nil {
			r.rep.problem("reports routed by a node: %v", err)
			continue
		}
		sum.FromBroker, sum.ToOwner, sum.ToAll, sum.RelayedIn, sum.NoOwner = sum.FromBroker+rc.FromBroker, sum.ToOwner+rc.ToOwner,
			sum.ToAll+rc.ToAll, sum.RelayedIn+rc.RelayedIn, sum.NoOwner+rc.NoOwner
	}
	r.rep.note("agents' reports (shared subscription) routed by the nodes alive at the end: %d from the broker, %d relayed to the node holding the agent's calls (or the grant), %d to every node, %d dropped (their node was gone)",
		sum.FromBroker, sum.ToOwner, sum.ToAll, sum.NoOwner)
	return nil
}

func nodeID(i int) string { return fmt.Sprintf("node%d", i+1) }

func (cr *clusterRun) dir(i int) string { return filepath.Join(cr.r.dir, nodeID(i)) }

// start starts node i as a child process.
func (cr *clusterRun) start(ctx context.Context, i int) error {
	r := cr.r
	args := []string{"chaos-node", "--data-dir", cr.dir(i), "--node-id", nodeID(i), "--broker-url", cr.brokerURL,
		"--etcd", cr.etcd, "--cluster-port", strconv.Itoa(cr.ports[i]), "--state-url", cr.stateURL}
	p, err := child.StartLogged(nodeID(i), r.opts.Binary, args, filepath.Join(r.dir, nodeID(i)+".log"), child.Options{Interactive: true})
	if err != nil {
		return err
	}
	r.procs = append(r.procs, p)
	nc := &nodeChild{p: p, done: make(chan struct{}), waiting: map[int]chan nodeReply{}}
	r.nodes = append(r.nodes, nc)
	go nc.dispatch()
	if _, err := p.WaitReady(ctx); err != nil {
		return fmt.Errorf("%w (see %s.log)", err, nodeID(i))
	}
	cr.mu.Lock()
	cr.nodes[i] = nc
	cr.mu.Unlock()
	return nil
}

// alive returns the nodes running now.
func (cr *clusterRun) alive() []*nodeChild {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	var out []*nodeChild
	for _, nc := range cr.nodes {
		if nc != nil {
			out = append(out, nc)
		}
	}
	return out
}

// waitMembers waits until every running node sees k members.
func (cr *clusterRun) waitMembers(ctx context.Context, k int) error {
	for _, nc := range cr.alive() {
		if err := nc.waitMembers(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// chat returns a chat function that sends each chat through the next
// running node, skipping node skip (-1: none).
func (cr *clusterRun) chat(skip int) func(ctx context.Context, conv, text string) (string, error) {
	var mu sync.Mutex
	next := 0
	return func(ctx context.Context, conv, text string) (string, error) {
		cr.mu.Lock()
		var via *nodeChild
		for range clusterNodes {
			mu.Lock()
			i := next % clusterNodes
			next++
			mu.Unlock()
			if i != skip && cr.nodes[i] != nil {
				via = cr.nodes[i]
				break
			}
		}
		cr.mu.Unlock()
		if via == nil {
			return "", errors.New("no node running")
		}
		return via.chat(ctx, conv, text)
	}
}

// owner returns the index of the node that appended the conversation's
// latest message to the shared history.
func (cr *clusterRun) owner(ctx context.Context) (int, error) {
	db, err := sql.Open("libsql", cr.stateURL)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var node string
	if err := db.QueryRowContext(ctx, `SELECT node FROM cluster_messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1`,
		cr.r.conv).Scan(&node); err != nil {
		return 0, fmt.Errorf("owner of %s in the shared history: %w", cr.r.conv, err)
	}
	for i := range clusterNodes {
		if nodeID(i) == node {
			return i, nil
		}
	}
	return 0, fmt.Errorf("owner of %s: unknown node %q", cr.r.conv, node)
}

// startEtcd runs a one-member etcd on loopback ports with its data in the
// run's directory and returns its client address.
func (cr *clusterRun) startEtcd(ctx context.Context) (string, error) {
	e, err := cluster.StartLocalEtcd(ctx, cr.r.dir)
	if err != nil {
		return "", fmt.Errorf("node-kill: %w", err)
	}
	cr.r.cleanups = append(cr.r.cleanups, func() { _ = e.Stop() })
	return e.Addr, nil
}

// startSQLD runs sqld on a loopback port with its data in the run's
// directory and returns its URL.
func (cr *clusterRun) startSQLD(ctx context.Context) (string, error) {
	bin := os.Getenv(SQLDEnv)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("sqld"); err != nil {
			return "", fmt.Errorf("node-kill needs sqld, the libSQL server (on PATH or in $%s): %w", SQLDEnv, err)
		}
	}
	port, err := cluster.FreeLoopbackPort()
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if _, err := cr.peer("sqld", bin, "--db-path", filepath.Join(cr.r.dir, "sqld"), "--http-listen-addr",
		fmt.Sprintf("127.0.0.1:%d", port), "--no-welcome"); err != nil {
		return "", err
	}
	if err := waitFor(ctx, 30*time.Second, "sqld healthy on "+url, func() bool { return healthy(url + "/health") }); err != nil {
		return "", err
	}
	return url, nil
}

// peer starts a peer program; its output goes to NAME.log in the run's
// directory and it is stopped with the run.
func (cr *clusterRun) peer(name, bin string, args ...string) (*child.Process, error) {
	p, err := child.StartLogged(name, bin, args, filepath.Join(cr.r.dir, name+".log"), child.Options{})
	if err != nil {
		return nil, err
	}
	cr.r.procs = append(cr.r.procs, p)
	return p, nil
}

// healthy reports whether GET url answers 200.
func healthy(url string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
