//go:build !nocluster

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// actorAddr is node i's actor address, from its config.
func (tc *testCluster) actorAddr(i int) string {
	tc.t.Helper()
	b, err := os.ReadFile(tc.nodes[i].conf)
	if err != nil {
		tc.t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^port = (\d+)$`).FindSubmatch(b)
	if m == nil {
		tc.t.Fatalf("no actor port in %s", tc.nodes[i].conf)
	}
	return "127.0.0.1:" + string(m[1])
}

// TestClusterAgentMovesOnJoin: a node joins while another node's call
// runs on an agent whose calls the new node now holds. The call is
// placed again on the new holder under its request_id, the old holder
// forgets it, the agent runs it once and the chat gets its result; the
// new holder is the holder every node names.
func TestClusterAgentMovesOnJoin(t *testing.T) {
	t.Parallel() // a slow test that mostly waits: see "Slow tests run in parallel" in cluster_test.go
	state := sqldtest.Start(t, sqldtest.Options{})
	dir := t.TempDir()
	marker := filepath.Join(dir, "runs")
	tc := newTestCluster(t, 3, "") // configs first: the agent is chosen by the nodes' addresses
	addrs := []string{tc.actorAddr(0), tc.actorAddr(1), tc.actorAddr(2)}
	agent := ""
	for k := 0; k < 100 && agent == ""; k++ {
		id := fmt.Sprintf("mover%d", k)
		two, err1 := cluster.OwnerAmong(addrs[:2], id, "agent")
		three, err2 := cluster.OwnerAmong(addrs, id, "agent")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if two != "" && three == addrs[2] {
			agent = id
		}
	}
	if agent == "" {
		t.Fatal("no agent id of 100 moves to node3 when it joins")
	}
	transcript := slowTranscriptOf(t, dir, agent, marker, "6", 4)
	for i := range tc.nodes {
		f, err := os.OpenFile(tc.nodes[i].conf, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "state_url = %q\n[llm]\nprovider = \"scripted\"\ntranscript = %q\n", state.URL(), transcript)
		f.Close()
	}
	tc.start(0)
	tc.start(1)
	tc.waitMembers([]int{0, 1}, "node1", "node2")
	evoclawtest.StartEdge(t, evoclawtest.EdgeSpec{ID: agent, BrokerURL: tc.mqtt, SkillDirs: []string{slowSkill(t)}})
	for i := range 2 {
		testenv.Eventually(t, clusterWait, func() bool {
			time.Sleep(50 * time.Millisecond) // one status request per 50ms
			a := agentStatus(t, tc, i, agent)
			return a.Online && slices.Contains(a.Tools, "slow")
		}, tc.nodes[i].id+" sees "+agent+" with its tool")
	}
	before := agentHolder(t, tc, 0, agent)
	if before == "" || before == "node3" {
		t.Fatalf("%s's calls are held by %q with two nodes", agent, before)
	}

	type result struct {
		code int
		body []byte
	}
	done := make(chan result, 1)
	go func() {
		code, b := tc.api(0, http.MethodPost, "/v1/chat", orchestrator.ChatRequest{ConversationID: "conv-move", Text: "go"})
		done <- result{code, b}
	}()
	testenv.Eventually(t, clusterWait, func() bool { return lines(marker) == 1 }, "the call starts on "+agent)
	tc.start(2)
	tc.waitMembers([]int{0, 1, 2}, "node1", "node2", "node3")
	r := <-done
	var ok orchestrator.ChatResponse
	if err := json.Unmarshal(r.body, &ok); err != nil || r.code != http.StatusOK || ok.Text != "tool said slept 6" {
		t.Fatalf("chat whose agent moved to a joining node: status %d, body %s", r.code, r.body)
	}
	if n := lines(marker); n != 1 {
		t.Errorf("the tool ran %d times for one call", n)
	}
	var moved int64
	for i := range tc.nodes {
		if h := agentHolder(t, tc, i, agent); h != "node3" {
			t.Errorf("%s says %s's calls are held by %q, want node3", tc.nodes[i].id, agent, h)
		}
		if s, _ := tc.status(i); s.Cluster != nil {
			moved += s.Cluster.CallsMoved
		}
	}
	if moved == 0 {
		t.Error("no node placed the call again when its agent moved")
	}
	if code, out, errOut := runBinary(t, "", "status", "--data-dir", tc.nodes[0].dir); code != 0 || !strings.Contains(out, "calls held by node3") {
		t.Errorf("evoclaw status exit %d does not name node3 as %s's holder:\n%s\n%s", code, agent, out, errOut)
	}
	// The next call goes to the new holder at once.
	if got := tc.chat(1, "conv-move-2", "go"); got != "tool said slept 6" {
		t.Fatalf("chat after the move = %q", got)
	}
	if n := lines(marker); n != 2 {
		t.Errorf("the tool ran %d times for two calls", n)
	}
}
