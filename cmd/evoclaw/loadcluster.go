package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
)

// maxLoadNodes bounds the cluster sizes `evoclaw load --cluster` takes.
const maxLoadNodes = 8

// parseClusterSizes reads --cluster: comma-separated node counts, 1 to
// maxLoadNodes each, no repeats.
func parseClusterSizes(s string) ([]int, error) {
	var sizes []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxLoadNodes || seen[n] {
			return nil, fmt.Errorf("%w: --cluster %q: want distinct node counts 1..%d, e.g. 1,2,3", errUsage, s, maxLoadNodes)
		}
		seen[n] = true
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// clusterLoad is one cluster size's result.
type clusterLoad struct {
	nodes         int
	perSec        float64
	p50, p99, max time.Duration
	failed        int
	memPerNodeKB  float64
	forwarded     int64
}

// loadCluster runs the load against clusters of each size in turn: the
// nodes in this process (node 1's embedded broker for all, membership in
// a local etcd), the simulated agents in a child, the conversations
// spread over the nodes' front doors, each run by its owner.
func loadCluster(ctx context.Context, sizes []int, agents, convs int, timeout time.Duration, stdout, stderr io.Writer) error {
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	dir, err := os.MkdirTemp("", "evoclaw-load-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	etcd, err := cluster.StartLocalEtcd(ctx, dir)
	if err != nil {
		return err
	}
	defer etcd.Stop()
	say("evoclaw load --cluster: %d simulated agents, %d concurrent conversations per size, etcd %s (scripted LLM: not a model)", agents, convs, etcd.Addr)
	say("every node runs in this process on the same cores: the numbers show what forwarding costs, not how a cluster of machines scales")
	var results []clusterLoad
	for _, n := range sizes {
		r, err := loadClusterSize(ctx, filepath.Join(dir, fmt.Sprintf("size%d", n)), etcd.Addr, n, agents, convs, timeout, stderr)
		if err != nil {
			return fmt.Errorf("%d nodes: %w", n, err)
		}
		results = append(results, r)
		say("  %d node(s): %.0f conversations/s, p99 %s", n, r.perSec, r.p99)
	}
	say("")
	say("nodes  conversations/s  p50        p99        max        forwarded  failed  private memory grown per node (node + its conversations)")
	for _, r := range results {
		say("%5d  %15.0f  %-9s  %-9s  %-9s  %9d  %6d  %.1f MB", r.nodes, r.perSec, r.p50, r.p99, r.max, r.forwarded, r.failed, r.memPerNodeKB/1024)
	}
	for _, r := range results {
		if r.failed > 0 {
			return fmt.Errorf("%d of %d conversations failed with %d nodes", r.failed, convs, r.nodes)
		}
	}
	return nil
}

func loadClusterSize(ctx context.Context, dir, etcdAddr string, n, agents, convs int, timeout time.Duration, stderr io.Writer) (clusterLoad, error) {
	res := clusterLoad{nodes: n}
	base, err := settledMem()
	if err != nil {
		return res, err
	}
	var nodes []*orchestrator.Node
	defer func() {
		var wg sync.WaitGroup
		for _, node := range nodes {
			wg.Add(1)
			go func() { defer wg.Done(); node.Close() }()
		}
		wg.Wait()
	}()
	for i := range n {
		port, err := cluster.FreeLoopbackPort()
		if err != nil {
			return res, err
		}
		cfg := orchestrator.Config{NodeID: fmt.Sprintf("load%d", i+1), DataDir: filepath.Join(dir, fmt.Sprint(i+1)),
			Cluster: cluster.Config{Etcd: []string{etcdAddr}, Name: fmt.Sprintf("load-%d", n), Port: port}}
		if i == 0 {
			// Loopback-only, anonymous: the simulated agents and the other
			// nodes connect without credentials.
			cfg.Broker = orchestrator.BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: orchestrator.BrokerSecurity{AllowAnonymous: true}}
		} else {
			cfg.Broker = orchestrator.BrokerConf{URL: nodes[0].BrokerURL()}
		}
		cfg.Loop.ChatTimeout.Duration = timeout
		node, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Provider: loadProvider{}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return res, err
		}
		nodes = append(nodes, node)
	}
	for _, node := range nodes {
		if err := waitClusterMembers(ctx, node, n); err != nil {
			return res, err
		}
	}
	sim, err := startChild("load-agents", []string{"load-agents", "--broker", nodes[0].BrokerURL(), "--count", fmt.Sprint(agents)}, stderr)
	if err != nil {
		return res, err
	}
	defer sim.Stop()
	if _, err := sim.WaitReady(ctx); err != nil {
		return res, err
	}
	for _, node := range nodes {
		if err := node.WaitForAgents(ctx, agents); err != nil {
			return res, err
		}
	}
	r := runConversations(ctx, convs, agents, func(i int) *orchestrator.Node { return nodes[i%n] })
	res.failed = r.failed
	after, err := settledMem()
	if err != nil {
		return res, err
	}
	res.perSec, res.p50, res.p99, res.max = float64(convs)/r.wall.Seconds(), r.pct(0.5), r.pct(0.99), r.lat[len(r.lat)-1].Round(time.Microsecond)
	res.memPerNodeKB = float64(after.mem.Anon-base.mem.Anon) / float64(n)
	for _, node := range nodes {
		res.forwarded += node.ClusterForwarded()
	}
	return res, nil
}

// waitClusterMembers waits until node sees n members.
func waitClusterMembers(ctx context.Context, node *orchestrator.Node, n int) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if c := node.Status().Cluster; c != nil && len(c.Members) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %d cluster members: %w", n, ctx.Err())
		case <-t.C:
		}
	}
}
