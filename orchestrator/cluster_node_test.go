// The race detector is off for this file: protoactor-go's cluster races
// with itself (remote.BlockList, cluster.MemberList, the etcd provider's
// shutdown flag are shared between its goroutines unguarded), so no
// in-process cluster test is race-clean whatever evoclaw does. The other
// cluster tests run the nodes as processes.

//go:build !race && !nocluster

package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// namedProvider answers "NODE saw N" where N counts the user messages of
// the conversation: who ran a chat, and with how much history.
func namedProvider(node string) funcProvider {
	return func(_ context.Context, req llm.Request) (llm.Response, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser {
				n++
			}
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("%s saw %d", node, n)}}, nil
	}
}

// peerNode is an `evoclaw serve` child process of a test.
type peerNode struct {
	cmd        *exec.Cmd
	api, token string
	stderr     bytes.Buffer
	exited     chan struct{}
	killOnce   atomic.Bool
	dataDir    string
}

// startPeerNode runs `evoclaw serve` with the config body; its scripted
// model answers the n-th chat of a conversation "b saw n".
func startPeerNode(t *testing.T, body string) *peerNode {
	t.Helper()
	dir := t.TempDir()
	var turns []map[string]string
	for i := 1; i <= 10; i++ {
		turns = append(turns, map[string]string{"content": fmt.Sprintf("b saw %d", i)})
	}
	tr, err := json.Marshal(map[string]any{"name": "b", "turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.json"), tr, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "evoclaw.toml")
	body += fmt.Sprintf("[llm]\nprovider = \"scripted\"\ntranscript = %q\n", filepath.Join(dir, "b.json"))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &peerNode{dataDir: filepath.Join(dir, "data"), exited: make(chan struct{})}
	p.cmd = exec.Command(evoclawtest.Binary(t), "serve", "--config", conf, "--data-dir", p.dataDir)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), ", api "); i >= 0 {
				select {
				case ready <- sc.Text()[i+len(", api "):]:
				default:
				}
			}
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("peer node stderr:\n%s", p.stderr.String())
		}
	})
	select {
	case p.api = <-ready:
	case <-p.exited:
		t.Fatalf("peer node exited before ready:\n%s", p.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("peer node not ready")
	}
	tok, err := os.ReadFile(filepath.Join(p.dataDir, HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	p.token = strings.TrimSpace(string(tok))
	return p
}

func (p *peerNode) kill() {
	if p.killOnce.CompareAndSwap(false, true) {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// chat posts a chat with seed to the peer's API and returns the answer's
// text.
func (p *peerNode) chat(t *testing.T, conv string, seed int64) string {
	t.Helper()
	resp := send(t, http.MethodPost, p.api+"/v1/chat", p.token, ChatRequest{ConversationID: conv, Text: "hi", Sampling: llm.Sampling{Seed: &seed}})
	var r ChatResponse
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var f ChatFailure
		decodeBody(t, resp, &f)
		t.Fatalf("chat %s through b: %d %+v", conv, resp.StatusCode, f)
	}
	decodeBody(t, resp, &r)
	return r.Text
}

// members returns how many members the peer sees (0 when it does not answer).
func (p *peerNode) members(t *testing.T) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.api+"/v1/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var s Status
	if json.NewDecoder(resp.Body).Decode(&s) != nil || s.Cluster == nil {
		return 0
	}
	return len(s.Cluster.Members)
}

// TestClusterForwarding runs node a in this process (for the race
// detector) and node b as an `evoclaw serve` process: chats taken by
// either node run on the conversation's one owner, progress comes back
// across, and so do the chat's sampling hints; after b is SIGKILLed a
// chat forwarded to it ends typed or, once a sees b gone, runs on a.
func TestClusterForwarding(t *testing.T) {
	if strconv.IntSize == 32 {
		t.Skip("clustering is refused on 32-bit builds (cluster.ErrNot64Bit); TestClusterRefusedOn32Bit checks the refusal")
	}
	etcd := testenv.StartEtcd(t)
	broker, _, _ := mqtttest.StartMosquitto(t)
	b := startPeerNode(t, fmt.Sprintf("node_id = \"b\"\n[broker]\nurl = %q\n[http]\nlisten = \"127.0.0.1:0\"\n[cluster]\netcd = [%q]\nname = \"t\"\nport = %d\n",
		broker, etcd.Addr(), testenv.FreePort(t)))
	var seeds testenv.Recorded[int64] // the seeds of a's model calls
	named := namedProvider("a")
	provider := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if req.Sampling.Seed != nil {
			seeds.Add(*req.Sampling.Seed)
		}
		return named(ctx, req)
	})
	a := startNode(t, Config{NodeID: "a", DataDir: t.TempDir(), Broker: BrokerConf{URL: broker},
		Cluster: cluster.Config{Etcd: []string{etcd.Addr()}, Name: "t", Port: testenv.FreePort(t)}}, Options{Provider: provider})
	testenv.Eventually(t, 30*time.Second, func() bool {
		c := a.Status().Cluster
		return c != nil && len(c.Members) == 2
	}, "a sees both members")
	if r := a.Ready(); !r.Ready || r.Checks[len(r.Checks)-1].Name != CheckCluster || !r.Checks[len(r.Checks)-1].OK {
		t.Fatalf("a clustered node listed as a member: readiness %+v", r)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		time.Sleep(20 * time.Millisecond) // one status request per 20ms
		return b.members(t) == 2
	}, "b sees both members")

	owners := map[string]string{}
	var wantSeeds []int64 // of the chats b took for a's conversations
	for i := range 20 {
		conv := fmt.Sprintf("conv-%d", i)
		var steps atomic.Int32
		ans, err := a.Converse(context.Background(), ChatInput{ConversationID: conv, Text: "hi",
			Progress: func(actors.Progress) { steps.Add(1) }})
		if err != nil {
			t.Fatalf("%s through a: %v", conv, err)
		}
		owner, saw, ok := strings.Cut(ans.Text, " saw ")
		if !ok || saw != "1" || steps.Load() == 0 {
			t.Fatalf("%s through a: answer %q after %d progress steps", conv, ans.Text, steps.Load())
		}
		owners[conv] = owner
		if got, want := b.chat(t, conv, int64(100+i)), owner+" saw 2"; got != want {
			t.Fatalf("%s through b: %q, want %q (the owner with the history)", conv, got, want)
		}
		if owner == "a" {
			wantSeeds = append(wantSeeds, int64(100+i))
		}
	}
	if got := seeds.All(); fmt.Sprint(got) != fmt.Sprint(wantSeeds) {
		t.Fatalf("a's model got the seeds %v, want %v: those of the chats b forwarded to it", got, wantSeeds)
	}
	count := map[string]int{}
	for _, o := range owners {
		count[o]++
	}
	if count["a"] == 0 || count["b"] == 0 {
		t.Fatalf("owners %v: want conversations on both nodes", count)
	}

	b.kill()
	for conv, o := range owners {
		if o != "b" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := a.Converse(ctx, ChatInput{ConversationID: conv, Text: "after"})
		cancel()
		// Before a sees b leave: node_lost when the chat reached b's
		// grain, not ready when b's placement could not be asked.
		if err != nil && !errors.Is(err, ErrNodeLost) && !errors.Is(err, ErrNotReady) {
			t.Fatalf("%s after b died: %v, want an answer, %v or %v", conv, err, ErrNodeLost, ErrNotReady)
		}
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		c := a.Status().Cluster
		return c != nil && len(c.Members) == 1
	}, "a sees b gone")
	for conv, o := range owners {
		if o == "b" {
			if ans, err := a.Converse(context.Background(), ChatInput{ConversationID: conv, Text: "alone"}); err != nil || !strings.HasPrefix(ans.Text, "a saw") {
				t.Fatalf("%s with a alone: %v %v", conv, ans, err)
			}
		}
	}
}

// TestClusterRefusedOn32Bit: on a 32-bit build (the ARM suites of CI run
// this package on an emulated armv6) a node with [cluster] does not start,
// and says why, instead of dying on protoactor-go's registry.
func TestClusterRefusedOn32Bit(t *testing.T) {
	if strconv.IntSize != 32 {
		t.Skip("64-bit build: cluster.TestRefusedOn32Bit checks the rule here")
	}
	_, err := Start(context.Background(), Config{NodeID: "a", DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0"},
		Cluster: cluster.Config{Etcd: []string{"127.0.0.1:2379"}}}, Options{})
	if !errors.Is(err, cluster.ErrNot64Bit) {
		t.Fatalf("Start with [cluster] on 32-bit = %v, want cluster.ErrNot64Bit", err)
	}
}

// TestClusterHistoryMaxAge: a node with [cluster] history_max_age deletes
// from sqld the conversations idle longer than that, soon after start,
// keeps the others, and stops its loop at Close.
func TestClusterHistoryMaxAge(t *testing.T) {
	if strconv.IntSize == 32 {
		t.Skip("clustering is refused on 32-bit builds (cluster.ErrNot64Bit)")
	}
	etcd := testenv.StartEtcd(t)
	srv := sqldtest.Start(t, sqldtest.Options{})
	sh, err := cluster.OpenSharedHistory(srv.URL(), "", "earlier")
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	ctx := context.Background()
	body := []byte(`{"role":"user","content":"hi"}`)
	for id, age := range map[string]time.Duration{"idle-3d": 72 * time.Hour, "idle-2h": 2 * time.Hour, "idle-10m": 10 * time.Minute} {
		m := persistence.Message{Role: "user", Body: body, Time: time.Now().Add(-age)}
		if err := sh.AppendMessages(ctx, id, []persistence.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	a := startNode(t, Config{NodeID: "a", DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0"},
		Cluster: cluster.Config{Etcd: []string{etcd.Addr()}, Name: "t", Port: testenv.FreePort(t), StateURL: srv.URL(), HistoryMaxAge: 90 * time.Minute}},
		Options{Provider: namedProvider("a")})
	count := func(id string) int {
		got, err := sh.LoadMessages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		time.Sleep(20 * time.Millisecond)
		return count("idle-3d") == 0 && count("idle-2h") == 0
	}, "the node deletes the conversations idle past 90 minutes")
	if n := count("idle-10m"); n != 1 {
		t.Errorf("a conversation idle 10 minutes has %d messages, want 1", n)
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}
