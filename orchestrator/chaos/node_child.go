package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
)

// The orchestrator-kill scenario needs the node in a process it can
// SIGKILL: `evoclaw chaos-node` runs ServeNode, which takes requests as
// JSON lines on stdin and answers each with a JSON line on stdout.

// nodeRequest asks the child node for a chat, or to wait for an agent.
type nodeRequest struct {
	ID        int    `json:"id"`
	Conv      string `json:"conv,omitempty"`
	Text      string `json:"text,omitempty"`
	WaitAgent string `json:"wait_agent,omitempty"`
	// WaitMembers waits until the node's cluster has exactly this many
	// members.
	WaitMembers int `json:"wait_members,omitempty"`
	// Reports asks for the node's counts of routed agents' reports
	// (cluster.ReportCounts as JSON in the reply's text).
	Reports bool `json:"reports,omitempty"`
}

// nodeReply answers the request with the same ID.
type nodeReply struct {
	ID   int    `json:"id"`
	Text string `json:"text,omitempty"`
	Err  string `json:"err,omitempty"`
}

// errNodeKilled means the child node ended before it answered.
var errNodeKilled = errors.New("the orchestrator process ended before it answered")

// nodeConfig is the configuration of every scenario's node: the embedded
// broker on listen, on loopback, with anonymous agents, unless brokerURL
// names an external one.
// NodeOptions make a chaos node one of a cluster (node-kill); the zero
// value is a node alone with its embedded broker.
type NodeOptions struct {
	NodeID    string
	BrokerURL string
	Cluster   cluster.Config
}

func nodeConfig(dataDir, listen, brokerURL string) orchestrator.Config {
	cfg := orchestrator.Config{DataDir: dataDir, Broker: orchestrator.BrokerConf{URL: brokerURL}}
	if brokerURL == "" {
		cfg.Broker.Listen = listen
		cfg.Broker.AllowAnonymous = true // the agents connect without credentials on loopback
	}
	cfg.Loop.HeartbeatTimeout.Duration = heartbeatTimeout
	cfg.Loop.ChatTimeout.Duration = CallBound
	return cfg
}

// ServeNode runs a scenario node (the chaos driver as its model, the
// embedded broker on listen, anonymous loopback agents) until stdin ends
// or ctx does. It prints "evoclaw chaos node ready: tcp://ADDR", then
// serves one JSON request per stdin line, concurrently, answering each
// with a JSON line on stdout.
func ServeNode(ctx context.Context, dataDir, listen string, no NodeOptions, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	cfg := nodeConfig(dataDir, listen, no.BrokerURL)
	cfg.NodeID, cfg.Cluster = no.NodeID, no.Cluster
	n, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Provider: driver{}, Logger: log})
	if err != nil {
		return err
	}
	defer n.Close()
	var mu sync.Mutex // serialises lines to stdout
	write := func(v nodeReply) {
		b, _ := json.Marshal(v) // plain fields always marshal
		mu.Lock()
		defer mu.Unlock()
		_, _ = stdout.Write(append(b, '\n'))
	}
	fmt.Fprintf(stdout, "evoclaw chaos node ready: %s\n", n.BrokerURL())
	var wg sync.WaitGroup
	defer wg.Wait()
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		var req nodeRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			write(nodeReply{ID: req.ID, Err: "bad request: " + err.Error()})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep := nodeReply{ID: req.ID}
			if req.Reports {
				if c := n.Status().Cluster; c != nil {
					b, _ := json.Marshal(c.Reports) // plain fields always marshal
					rep.Text = string(b)
				}
			} else if req.WaitMembers > 0 {
				err := waitFor(ctx, clusterWait, fmt.Sprintf("%d cluster members", req.WaitMembers), func() bool {
					c := n.Status().Cluster
					return c != nil && len(c.Members) == req.WaitMembers
				})
				if err != nil {
					rep.Err = err.Error()
				}
			} else if req.WaitAgent != "" {
				err := waitFor(ctx, 30*time.Second, "agent "+req.WaitAgent+" online with its tools", func() bool {
					a, ok := n.Catalog().Agents[req.WaitAgent]
					return ok && a.Online && len(a.Tools) > 0
				})
				if err != nil {
					rep.Err = err.Error()
				}
			} else if ans, err := n.Chat(ctx, req.Conv, req.Text); errors.Is(err, orchestrator.ErrNodeLost) {
				// Typed as the loop types its errors, for the outcome.
				rep.Text = "Error (" + OutcomeNodeLost + "): " + err.Error()
			} else if err != nil {
				rep.Err = err.Error()
			} else {
				rep.Text = ans.Text
			}
			write(rep)
		}()
	}
	return sc.Err()
}

// nodeChild is the scenario's side of a node running ServeNode.
type nodeChild struct {
	p    *child.Process
	done chan struct{} // closed when dispatch has ended

	mu      sync.Mutex // guards next, waiting, ended and writes to p.stdin
	next    int
	waiting map[int]chan nodeReply
	ended   bool
}

// startNodeChild starts `evoclaw chaos-node` on the run's node directory
// and makes it the run's node.
func (r *run) startNodeChild(ctx context.Context, listen string) (*nodeChild, string, error) {
	dir := filepath.Join(r.dir, "orchestrator")
	p, err := child.StartLogged("orchestrator", r.opts.Binary, []string{"chaos-node", "--data-dir", dir, "--listen", listen},
		filepath.Join(r.dir, "orchestrator.log"), child.Options{Interactive: true})
	if err != nil {
		return nil, "", err
	}
	r.procs = append(r.procs, p)
	nc := &nodeChild{p: p, done: make(chan struct{}), waiting: map[int]chan nodeReply{}}
	r.nodes = append(r.nodes, nc)
	go nc.dispatch()
	line, err := p.WaitReady(ctx)
	if err != nil {
		return nil, "", err
	}
	url := line[strings.LastIndex(line, " ")+1:]
	r.audit = filepath.Join(dir, orchestrator.AuditFile)
	r.chat = nc.chat
	r.agentReady = nc.waitAgent
	return nc, url, nil
}

// dispatch hands every reply to its waiter; when the child's stdout ends,
// every waiter still waiting gets errNodeKilled.
func (nc *nodeChild) dispatch() {
	defer close(nc.done)
	for line := range nc.p.Lines() {
		var rep nodeReply
		if json.Unmarshal([]byte(line), &rep) != nil {
			continue
		}
		nc.mu.Lock()
		ch, ok := nc.waiting[rep.ID]
		delete(nc.waiting, rep.ID)
		nc.mu.Unlock()
		if ok {
			ch <- rep
		}
	}
	nc.mu.Lock()
	defer nc.mu.Unlock()
	nc.ended = true
	for id, ch := range nc.waiting {
		close(ch)
		delete(nc.waiting, id)
	}
}

func (nc *nodeChild) request(ctx context.Context, req nodeRequest) (nodeReply, error) {
	ch := make(chan nodeReply, 1)
	nc.mu.Lock()
	if nc.ended {
		nc.mu.Unlock()
		return nodeReply{}, errNodeKilled
	}
	nc.next++
	req.ID = nc.next
	nc.waiting[req.ID] = ch
	b, _ := json.Marshal(req) // plain fields always marshal
	_, err := nc.p.Stdin().Write(append(b, '\n'))
	nc.mu.Unlock()
	if err != nil {
		return nodeReply{}, fmt.Errorf("%w: %w", errNodeKilled, err)
	}
	select {
	case rep, ok := <-ch:
		if !ok {
			return nodeReply{}, errNodeKilled
		}
		if rep.Err != "" {
			return rep, errors.New(rep.Err)
		}
		return rep, nil
	case <-ctx.Done():
		return nodeReply{}, ctx.Err()
	}
}

func (nc *nodeChild) chat(ctx context.Context, conv, text string) (string, error) {
	rep, err := nc.request(ctx, nodeRequest{Conv: conv, Text: text})
	return rep.Text, err
}

func (nc *nodeChild) waitMembers(ctx context.Context, k int) error {
	_, err := nc.request(ctx, nodeRequest{WaitMembers: k})
	return err
}

// reports returns the node's counts of routed agents' reports.
func (nc *nodeChild) reports(ctx context.Context) (cluster.ReportCounts, error) {
	var rc cluster.ReportCounts
	rep, err := nc.request(ctx, nodeRequest{Reports: true})
	if err == nil {
		err = json.Unmarshal([]byte(rep.Text), &rc)
	}
	return rc, err
}

func (nc *nodeChild) waitAgent(ctx context.Context, id string) error {
	_, err := nc.request(ctx, nodeRequest{WaitAgent: id})
	return err
}
