package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// publicAgent is testdata/peers/public_agent.py: an edge agent written from
// the public message format with the Python standard library alone, no
// evoclaw code. It prints every command it receives.
type publicAgent struct {
	mu   sync.Mutex // guards cmds
	cmds []wire.Command
	stop func()
}

// startPublicAgent runs the public-format agent against the broker at
// brokerURL (tcp://host:port) with extra arguments; it is stopped when the
// test ends. Without python3 the test is skipped (fails with
// EVOCLAW_REQUIRE_PEERS=1).
func startPublicAgent(t *testing.T, brokerURL, id string, args ...string) *publicAgent {
	t.Helper()
	py, ok := testenv.Lookup("python3")
	if !ok {
		testenv.Missing(t, t.Skipf, "python3", "apt-get install python3")
	}
	script, err := filepath.Abs(filepath.Join("..", "testdata", "peers", "public_agent.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, py, append([]string{script, "--broker", strings.TrimPrefix(brokerURL, "tcp://"), "--id", id}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start public agent: %v", err)
	}
	a := &publicAgent{}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() { // owned: ends when the child's stdout closes
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "READY" {
				close(ready)
				continue
			}
			if rest, ok := strings.CutPrefix(line, "CMD "); ok {
				var c wire.Command
				if json.Unmarshal([]byte(rest), &c) == nil {
					a.mu.Lock()
					a.cmds = append(a.cmds, c)
					a.mu.Unlock()
				}
			}
		}
	}()
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			_ = cmd.Wait() // killed: the error says so
		})
	}
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("public agent stderr:\n%s", stderr.String())
		}
	})
	select {
	case <-ready:
	case <-done:
		t.Fatalf("public agent exited before it was ready: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("public agent not ready: %s", stderr.String())
	}
	return a
}

// commands returns the commands of kind the agent received.
func (a *publicAgent) commands(kind string) []wire.Command {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []wire.Command
	for _, c := range a.cmds {
		if c.Command == kind {
			out = append(out, c)
		}
	}
	return out
}

// startExternalNode starts a node on the external broker at url with a
// scripted transcript, in dataDir.
func startExternalNode(t *testing.T, url, dataDir, transcript string) *Node {
	t.Helper()
	p, err := scripted.Parse([]byte(transcript))
	if err != nil {
		t.Fatal(err)
	}
	n, err := Start(context.Background(), Config{DataDir: dataDir, Broker: BrokerConf{URL: url}}, Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// known reports whether the node has heard of agent (its retained
// capabilities, at least).
func known(n *Node, agent string) bool {
	a, ok := n.Catalog().Agents[agent]
	return ok && a.Capabilities != ""
}
