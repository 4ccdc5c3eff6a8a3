package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"

	_ "github.com/tursodatabase/libsql-client-go/libsql"
)

// clusterWait bounds what a cluster takes to notice a change: a killed
// node's etcd lease (3s) must expire and the watch deliver its deletion.
const clusterWait = 60 * time.Second

// clusterNodeSpec is one node of a test cluster.
type clusterNodeSpec struct {
	id, dir, conf string
}

// Slow tests run in parallel. The package's slowest tests (two minutes
// for a one-minute job's two instants, a minute for the shared jobs' first
// instant, tens of seconds for members to agree) spend most of their time
// waiting on their processes, so they call t.Parallel: they run after the
// package's other tests, beside each other (as many at once as -parallel,
// GOMAXPROCS by default), and the package takes about the longest one's
// time instead of their sum. Each starts its own etcd, broker, sqld and
// nodes on ports of its own, and none changes the process's environment.

// testCluster is etcd, one mosquitto and the nodes' configs; nodes are
// started with start.
type testCluster struct {
	t     *testing.T
	etcd  *testenv.Process
	mqtt  string
	nodes []clusterNodeSpec
	procs []*proc
}

// newTestCluster starts etcd and mosquitto and writes the config of n
// nodes (node1..nodeN) sharing them, each with its actor port, HTTP API
// on a loopback port and no model (the offline replies); extra is
// appended to each [cluster] section.
func newTestCluster(t *testing.T, n int, extra string) *testCluster {
	t.Helper()
	etcd := testenv.StartEtcd(t)
	return newTestClusterOn(t, n, extra, etcd, etcd.Addr())
}

// newTestClusterOn is newTestCluster on an etcd the test started, which
// the nodes reach at endpoint (cluster.etcd).
func newTestClusterOn(t *testing.T, n int, extra string, etcd *testenv.Process, endpoint string) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, etcd: etcd}
	tc.mqtt, _, _ = mqtttest.StartMosquitto(t)
	root := t.TempDir()
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("node%d", i)
		dir := filepath.Join(root, id)
		conf := filepath.Join(root, id+".toml")
		writeTestFile(t, conf, fmt.Sprintf(`node_id = %q
[broker]
url = %q
[http]
listen = "127.0.0.1:0"
[cluster]
etcd = [%q]
name = "test"
port = %d
%s`, id, tc.mqtt, endpoint, testenv.FreePort(t), extra))
		tc.nodes = append(tc.nodes, clusterNodeSpec{id: id, dir: dir, conf: conf})
		tc.procs = append(tc.procs, nil)
	}
	return tc
}

// startAll starts every node and waits until each sees all of them.
func (tc *testCluster) startAll() {
	tc.t.Helper()
	var all []int
	var ids []string
	for i, nd := range tc.nodes {
		tc.start(i)
		all, ids = append(all, i), append(ids, nd.id)
	}
	tc.waitMembers(all, ids...)
}

// openState opens the cluster's sqld for the test's own queries.
func openState(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("libsql", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// api sends method path body to node i's API with its token and returns
// the status and body; code 0 when it does not answer.
func (tc *testCluster) api(i int, method, path string, body any) (int, []byte) {
	tc.t.Helper()
	dir := tc.nodes[i].dir
	addr, err1 := os.ReadFile(filepath.Join(dir, orchestrator.HTTPAddrFile))
	token, err2 := os.ReadFile(filepath.Join(dir, orchestrator.HTTPTokenFile))
	if err1 != nil || err2 != nil {
		return 0, nil
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tc.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimSpace(string(addr))+path, rd)
	if err != nil {
		tc.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// chat posts text to conversation conv through node i and returns the
// answer's text, failing the test on any error.
func (tc *testCluster) chat(i int, conv, text string) string {
	tc.t.Helper()
	code, b := tc.api(i, http.MethodPost, "/v1/chat", orchestrator.ChatRequest{ConversationID: conv, Text: text})
	if code != http.StatusOK {
		tc.t.Fatalf("chat %s through %s: status %d: %s", conv, tc.nodes[i].id, code, b)
	}
	var r orchestrator.ChatResponse
	if err := json.Unmarshal(b, &r); err != nil {
		tc.t.Fatalf("chat %s: %v: %s", conv, err, b)
	}
	return r.Text
}

// start starts node i (0-based) and returns its API base URL.
func (tc *testCluster) start(i int) string {
	tc.t.Helper()
	s := tc.nodes[i]
	p, m := startProc(tc.t, procSpec{Ready: serveReady}, "serve", "--config", s.conf, "--data-dir", s.dir)
	tc.procs[i] = p
	return m[2]
}

// status GETs node i's /v1/status; ok is false when it does not answer.
func (tc *testCluster) status(i int) (orchestrator.Status, bool) {
	tc.t.Helper()
	code, b := tc.api(i, http.MethodGet, "/v1/status", nil)
	var s orchestrator.Status
	if code != http.StatusOK || json.Unmarshal(b, &s) != nil {
		return orchestrator.Status{}, false
	}
	return s, true
}

// members returns the node ids node i sees in its cluster, sorted.
func (tc *testCluster) members(i int) []string {
	s, ok := tc.status(i)
	if !ok || s.Cluster == nil {
		return nil
	}
	var ids []string
	for _, m := range s.Cluster.Members {
		ids = append(ids, m.Node)
	}
	slices.Sort(ids)
	return ids
}

// others returns the indexes and ids of every node but node i.
func (tc *testCluster) others(i int) ([]int, []string) {
	var idx []int
	var ids []string
	for j, nd := range tc.nodes {
		if j != i {
			idx, ids = append(idx, j), append(ids, nd.id)
		}
	}
	return idx, ids
}

// waitMembers waits until every node in from sees exactly want.
func (tc *testCluster) waitMembers(from []int, want ...string) {
	tc.t.Helper()
	for _, i := range from {
		testenv.Eventually(tc.t, clusterWait, func() bool {
			time.Sleep(50 * time.Millisecond) // one status request per 50ms, not a wait for an outcome
			return slices.Equal(tc.members(i), want)
		}, fmt.Sprintf("%s sees members %v (last seen %v)", tc.nodes[i].id, want, tc.members(i)))
	}
}

// TestClusterMembership: three serve processes on one etcd and one
// mosquitto see each other; a SIGKILLed node is gone from the others'
// status once its lease expires and back when it restarts; `evoclaw
// status` prints the members.
func TestClusterMembership(t *testing.T) {
	tc := newTestCluster(t, 3, "")
	tc.startAll()

	s, _ := tc.status(0)
	self := 0
	for _, m := range s.Cluster.Members {
		if m.Self {
			self++
			if m.Node != "node1" {
				t.Errorf("node1 marks %s as itself", m.Node)
			}
		}
	}
	if self != 1 || s.Cluster.Name != "test" {
		t.Errorf("node1's cluster status: %+v", s.Cluster)
	}
	code, out, errOut := runBinary(t, "", "status", "--data-dir", tc.nodes[0].dir)
	if code != 0 || !strings.Contains(out, "cluster test: 3 members") || !strings.Contains(out, "(this node)") {
		t.Errorf("evoclaw status exit %d:\n%s\n%s", code, out, errOut)
	}

	tc.procs[2].kill()
	tc.waitMembers([]int{0, 1}, "node1", "node2")

	tc.start(2)
	tc.waitMembers([]int{0, 1, 2}, "node1", "node2", "node3")
}

// TestClusterOffByDefault: a node without [cluster] reports no cluster
// section, as before.
func TestClusterOffByDefault(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "evoclaw.toml")
	writeTestFile(t, conf, "[broker]\nlisten = \"127.0.0.1:0\"\nallow_anonymous = true\n[http]\nlisten = \"127.0.0.1:0\"\n")
	startProc(t, procSpec{Ready: serveReady}, "serve", "--config", conf, "--data-dir", filepath.Join(dir, "node"))
	code, out, errOut := runBinary(t, "", "status", "--json", "--data-dir", filepath.Join(dir, "node"))
	if code != 0 || strings.Contains(out, `"cluster"`) {
		t.Errorf("evoclaw status --json exit %d: cluster section on a node alone:\n%s\n%s", code, out, errOut)
	}
}

// writeTranscript writes the scripted provider's transcript name with
// turns to dir/name.json and returns its path.
func writeTranscript(t *testing.T, dir, name string, turns any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".json")
	writeTestFile(t, path, string(b))
	return path
}

// countingTranscript answers the n-th assistant turn of a conversation
// with "turn n: <the user's text>", so an answer shows how much history
// the node that ran it had.
func countingTranscript(t *testing.T, dir string, turns int) string {
	t.Helper()
	var ts []map[string]string
	for i := 1; i <= turns; i++ {
		ts = append(ts, map[string]string{"content": fmt.Sprintf("turn %d: {{user}}", i)})
	}
	return writeTranscript(t, dir, "counting", ts)
}

// owners returns the nodes that appended conv's messages to the shared
// history, in seq order, one entry per message.
func owners(t *testing.T, db *sql.DB, conv string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT node FROM cluster_messages WHERE conversation_id = ? ORDER BY seq`, conv)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestClusterConversations: a conversation is run by one node whichever
// node's API takes its chats; when that node is SIGKILLed the next chat
// runs on a survivor, continuing from the shared history in sqld.
func TestClusterConversations(t *testing.T) {
	state := sqldtest.Start(t, sqldtest.Options{})
	transcript := countingTranscript(t, t.TempDir(), 20)
	// The same sqld is every node's audit cold tier: one view of the
	// cluster's trails.
	tc := newTestCluster(t, 3, fmt.Sprintf("state_url = %q\n[llm]\nprovider = \"scripted\"\ntranscript = %q\n[audit.cold]\nurl = %q\npoll_interval = \"200ms\"\n",
		state.URL(), transcript, state.URL()))
	tc.startAll()
	db := openState(t, state.URL())

	convs := []string{"conv-a", "conv-b", "conv-c", "conv-d", "conv-e", "conv-f"}
	for turn := 1; turn <= 3; turn++ {
		for ci, conv := range convs {
			via := (ci + turn) % 3 // every conversation through every node's API
			text := fmt.Sprintf("%s says %d", tc.nodes[via].id, turn)
			if got, want := tc.chat(via, conv, text), fmt.Sprintf("turn %d: %s", turn, text); got != want {
				t.Fatalf("chat %s turn %d through %s = %q, want %q", conv, turn, tc.nodes[via].id, got, want)
			}
		}
	}
	byOwner := map[string][]string{}
	for _, conv := range convs {
		o := owners(t, db, conv)
		if len(o) != 6 {
			t.Fatalf("%s: %d shared messages, want 6 (3 chats)", conv, len(o))
		}
		for _, n := range o[1:] {
			if n != o[0] {
				t.Fatalf("%s was run by more than one node: %v", conv, o)
			}
		}
		byOwner[o[0]] = append(byOwner[o[0]], conv)
		// Only the owner's own audit trail holds the conversation.
		for i, nd := range tc.nodes {
			rows := query(t, filepath.Join(nd.dir, orchestrator.AuditFile),
				fmt.Sprintf("SELECT COUNT(*) FROM messages WHERE conversation_id = '%s'", conv))
			n := rows[0][0].(int64)
			if (nd.id == o[0]) != (n == 6) || (nd.id != o[0] && n != 0) {
				t.Errorf("%s: %d messages in %s's audit (owner %s)", conv, n, tc.nodes[i].id, o[0])
			}
		}
	}
	t.Logf("owners: %v", byOwner)
	// One cold view answers for every node, and every chain verifies.
	var cold string
	testenv.Eventually(t, clusterWait, func() bool {
		time.Sleep(200 * time.Millisecond) // one query per 200ms, not a wait for an outcome
		code, out, _ := runBinary(t, "", "audit", "sql", "--data-dir", tc.nodes[0].dir, "--tier", "cold", "--cold-url", state.URL(), "--csv",
			"SELECT node FROM llm_calls GROUP BY node ORDER BY node")
		cold = out
		for owner := range byOwner {
			if code != 0 || !strings.Contains(out, owner) {
				return false
			}
		}
		return true
	}, "the cold tier holds every owner's llm calls")
	t.Logf("nodes in the cold tier: %s", strings.Fields(cold))
	// audit verify --tier cold checks every chain the cold tier holds:
	// one per node, each verified.
	verified := regexp.MustCompile(`(?m)^cold: chain (\S+): \d+ records verified`)
	testenv.Eventually(t, clusterWait, func() bool {
		time.Sleep(200 * time.Millisecond) // one run per 200ms, not a wait for an outcome
		code, out, errOut := runBinary(t, "", "audit", "verify", "--data-dir", tc.nodes[0].dir, "--tier", "cold", "--cold-url", state.URL())
		if code != 0 {
			t.Fatalf("audit verify --tier cold: exit %d\n%s\n%s", code, out, errOut)
		}
		return len(verified.FindAllStringSubmatch(out, -1)) == len(tc.nodes)
	}, "audit verify --tier cold verifies one chain per node")

	// Kill the node owning the most conversations; each of them continues
	// on a survivor from its stored history.
	victim := ""
	for n, cs := range byOwner {
		if victim == "" || len(cs) > len(byOwner[victim]) || len(cs) == len(byOwner[victim]) && n < victim {
			victim = n
		}
	}
	vi := slices.IndexFunc(tc.nodes, func(s clusterNodeSpec) bool { return s.id == victim })
	tc.procs[vi].kill()
	alive, aliveIDs := tc.others(vi)
	tc.waitMembers(alive, aliveIDs...)
	for k, conv := range byOwner[victim] {
		via := alive[k%len(alive)]
		text := "after the kill"
		if got, want := tc.chat(via, conv, text), "turn 4: "+text; got != want {
			t.Fatalf("chat %s after %s died = %q, want %q (the history of 3 turns)", conv, victim, got, want)
		}
		o := owners(t, db, conv)
		if len(o) != 8 || o[6] == victim || o[6] != o[7] {
			t.Fatalf("%s after the kill: shared messages by %v", conv, o)
		}
	}
}

// slowSkill writes a skill whose tool "slow" appends a line to its
// --marker file and then sleeps --seconds before answering "slept N":
// the marker counts the runs.
func slowSkill(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "bin", "slow"), `#!/bin/sh
while [ $# -gt 1 ]; do
  case "$1" in
    --marker) m=$2 ;;
    --seconds) s=$2 ;;
  esac
  shift 2
done
echo run >> "$m"
sleep "$s"
echo "slept $s"
`)
	if err := os.Chmod(filepath.Join(dir, "bin", "slow"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "skill.toml"), `[skill]
name = "slow"
version = "1.0.0"
description = "sleeps"
[[tools]]
name = "slow"
binary = "bin/slow"
description = "counts its runs and sleeps"
timeout_ms = 60000
[tools.parameters]
required = ["marker", "seconds"]
[tools.parameters.properties.marker]
type = "string"
description = "file to append to"
[tools.parameters.properties.seconds]
type = "string"
description = "how long to sleep"
`)
	return dir
}

// slowTranscript: every chat calls pi1__slow once (marker, seconds) and
// then answers "tool said <its result>".
func slowTranscript(t *testing.T, dir, marker, seconds string, chats int) string {
	t.Helper()
	return slowTranscriptOf(t, dir, "pi1", marker, seconds, chats)
}

// slowTranscriptOf is slowTranscript for the agent named agent.
func slowTranscriptOf(t *testing.T, dir, agent, marker, seconds string, chats int) string {
	t.Helper()
	var ts []map[string]any
	for i := 1; i <= chats; i++ {
		id := fmt.Sprintf("c%d", i)
		ts = append(ts,
			map[string]any{"content": "calling", "expect_tools": []string{agent + "__slow"},
				"tool_calls": []map[string]any{{"id": id, "name": agent + "__slow", "arguments": map[string]string{"marker": marker, "seconds": seconds}}}},
			map[string]any{"content": "tool said {{result " + id + "}}"})
	}
	return writeTranscript(t, dir, "slow", ts)
}

// lines counts the lines of the file at path (0 when missing).
func lines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// TestClusterEdgeCalls: an edge agent on the shared broker answers the
// calls of whichever node runs the conversation; the broker hands each
// report to one node (a shared subscription), which relays the results
// of another node's calls to it: nobody else acts on them or audits them
// as late. A node SIGKILLed while its call runs on the agent: the chat
// forwarded to it ends node_lost at once, the call runs once and is not
// run again.
func TestClusterEdgeCalls(t *testing.T) {
	t.Parallel() // a slow test that mostly waits: see "Slow tests run in parallel" in cluster_test.go
	state := sqldtest.Start(t, sqldtest.Options{})
	dir := t.TempDir()
	marker := filepath.Join(dir, "runs")
	transcript := slowTranscript(t, dir, marker, "2", 10)
	tc := newTestCluster(t, 3, fmt.Sprintf("state_url = %q\n[llm]\nprovider = \"scripted\"\ntranscript = %q\n", state.URL(), transcript))
	tc.startAll()
	edge := evoclawtest.StartEdge(t, evoclawtest.EdgeSpec{ID: "pi1", BrokerURL: tc.mqtt, SkillDirs: []string{slowSkill(t)}})
	for i := range tc.nodes {
		testenv.Eventually(t, clusterWait, func() bool {
			time.Sleep(50 * time.Millisecond) // one status request per 50ms
			s, _ := tc.status(i)
			for _, a := range s.Agents {
				if a.ID == "pi1" && a.Online && slices.Contains(a.Tools, "slow") {
					return true
				}
			}
			return false
		}, tc.nodes[i].id+" sees pi1 with its tool")
	}
	db := openState(t, state.URL())

	for i := range tc.nodes {
		if got := tc.chat(i, "conv-tools", "go"); got != "tool said slept 2" {
			t.Fatalf("chat through %s = %q", tc.nodes[i].id, got)
		}
	}
	if n := lines(marker); n != 3 {
		t.Fatalf("the tool ran %d times for 3 chats", n)
	}
	owner := owners(t, db, "conv-tools")[0]
	// pi1 is a cluster identity: one node holds its calls, every node
	// names the same one.
	holder := agentHolder(t, tc, 0, "pi1")
	for i := range tc.nodes {
		if h := agentHolder(t, tc, i, "pi1"); h != holder {
			t.Fatalf("%s says %s holds pi1's calls, %s says %s", tc.nodes[i].id, h, tc.nodes[0].id, holder)
		}
	}
	// The broker gave each report to one node (a shared subscription);
	// the results of pi1's calls that another node took reached pi1's
	// holder through the cluster.
	var toOwner, in, fromBroker int64
	for i, nd := range tc.nodes {
		s, _ := tc.status(i)
		if s.Cluster == nil {
			t.Fatalf("%s: no cluster status", nd.id)
		}
		r := s.Cluster.Reports
		t.Logf("%s: reports %+v", nd.id, r)
		toOwner, in, fromBroker = toOwner+r.ToOwner, in+r.RelayedIn, fromBroker+r.FromBroker
		if nd.id == holder && r.ToOwner != 0 {
			t.Errorf("pi1's holder %s relayed %d reports answering calls: it holds every call to pi1", nd.id, r.ToOwner)
		}
	}
	if in < toOwner || fromBroker == 0 {
		t.Errorf("reports: %d from the broker, %d relayed to the owner, %d relayed in", fromBroker, toOwner, in)
	}
	for _, nd := range tc.nodes {
		audit := filepath.Join(nd.dir, orchestrator.AuditFile)
		calls := query(t, audit, "SELECT COUNT(*) FROM tool_calls WHERE agent_id = 'pi1'")[0][0].(int64)
		late := query(t, audit, "SELECT COUNT(*) FROM events WHERE kind = 'late_result'")[0][0].(int64)
		if want := map[bool]int64{true: 3, false: 0}[nd.id == owner]; calls != want || late != 0 {
			t.Errorf("%s (owner %s): %d calls of slow audited (want %d), %d late results", nd.id, owner, calls, want, late)
		}
	}

	// The kill: a chat forwarded to the owner, whose call runs on pi1.
	vi := slices.IndexFunc(tc.nodes, func(s clusterNodeSpec) bool { return s.id == owner })
	via := (vi + 1) % 3
	type result struct {
		code int
		body []byte
	}
	done := make(chan result, 1)
	go func() {
		code, b := tc.api(via, http.MethodPost, "/v1/chat", orchestrator.ChatRequest{ConversationID: "conv-tools", Text: "again"})
		done <- result{code, b}
	}()
	testenv.Eventually(t, clusterWait, func() bool { return lines(marker) == 4 }, "the fourth call starts on pi1")
	tc.procs[vi].kill()
	r := <-done
	var f orchestrator.ChatFailure
	if err := json.Unmarshal(r.body, &f); err != nil || r.code != http.StatusServiceUnavailable || f.Error.Type != orchestrator.ErrTypeNodeLost {
		t.Fatalf("chat whose node died: status %d, body %s", r.code, r.body)
	}
	// pi1 finishes the call; nobody runs it again, nobody audits it late.
	testenv.Eventually(t, clusterWait, func() bool {
		return edge.Query("SELECT COUNT(*) FROM tool_calls WHERE tool = 'slow' AND status IS NOT NULL")[0][0].(int64) == 4
	}, "pi1 records the fourth call's end")
	alive, aliveIDs := tc.others(vi)
	tc.waitMembers(alive, aliveIDs...)
	// The cut call's assistant message was stored before its dispatch, so
	// the node that loads the conversation knows it and answers it as
	// interrupted; the scripted model, which picks its turn by the number
	// of assistant messages, then gives that turn's answer.
	if got := tc.chat(via, "conv-tools", "after"); !strings.Contains(got, "tool said Error (interrupted)") {
		t.Fatalf("chat after the kill = %q, want the cut call answered as interrupted", got)
	}
	if got := tc.chat(via, "conv-tools", "after again"); got != "tool said slept 2" {
		t.Fatalf("second chat after the kill = %q", got)
	}
	if n := lines(marker); n != 5 {
		t.Errorf("the tool ran %d times for 6 chats (one cut short by the kill, one answered from its cut call), want 5", n)
	}
	for _, i := range alive {
		audit := filepath.Join(tc.nodes[i].dir, orchestrator.AuditFile)
		if late := query(t, audit, "SELECT COUNT(*) FROM events WHERE kind = 'late_result'")[0][0].(int64); late != 0 {
			t.Errorf("%s audited %d late results", tc.nodes[i].id, late)
		}
	}

	// Results answering a live node's calls to agents nobody called,
	// published to the shared broker: whichever node the broker hands
	// each to, it reaches the node holding that agent's calls alone,
	// which audits it as late (no such call is pending). Each is
	// audited once in the cluster, on its agent's holder.
	target := alive[0]
	pub := mqtttest.Connect(t, mqttc.Options{BrokerURL: tc.mqtt, ClientID: "ghosts"})
	const ghosts = 6
	for g := range ghosts {
		p := fmt.Sprintf(`{"request_id":"tool-%s.1-%d","tool":"slow","status":"success","result":"ghost"}`, tc.nodes[target].id, g)
		if err := pub.Publish(t.Context(), mqttc.Message{Topic: wire.ReportsTopic(fmt.Sprintf("ghost-%d", g)), Payload: []byte(p), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	lateOf := func(i int) map[string]int64 {
		audit := filepath.Join(tc.nodes[i].dir, orchestrator.AuditFile)
		got := map[string]int64{}
		for _, row := range query(t, audit, "SELECT agent_id, COUNT(*) FROM events WHERE kind = 'late_result' AND agent_id LIKE 'ghost-%' GROUP BY agent_id") {
			got[row[0].(string)] = row[1].(int64)
		}
		return got
	}
	testenv.Eventually(t, clusterWait, func() bool {
		n := 0
		for _, i := range alive {
			n += len(lateOf(i))
		}
		return n == ghosts
	}, fmt.Sprintf("the %d ghost results are audited", ghosts))
	for _, i := range alive {
		for agent, n := range lateOf(i) {
			if h := agentHolder(t, tc, i, agent); n != 1 || h != tc.nodes[i].id {
				t.Errorf("%s audited %d late results of %s, whose calls %s holds", tc.nodes[i].id, n, agent, h)
			}
		}
	}

	// pi1's holder SIGKILLed while another node's call runs on pi1: the
	// call is placed again on the new holder, under its request_id, and
	// pi1 answers it once it finishes: the chat succeeds, the tool ran
	// once.
	holder = agentHolder(t, tc, alive[0], "pi1")
	hi := slices.IndexFunc(tc.nodes, func(s clusterNodeSpec) bool { return s.id == holder })
	caller := alive[0]
	if caller == hi {
		caller = alive[1]
	}
	conv := ""
	for k := 0; k < 12 && conv == ""; k++ {
		c := fmt.Sprintf("conv-move-%d", k)
		if got := tc.chat(caller, c, "go"); got != "tool said slept 2" {
			t.Fatalf("chat %s = %q", c, got)
		}
		if owners(t, db, c)[0] == tc.nodes[caller].id {
			conv = c
		}
	}
	if conv == "" {
		t.Fatalf("no conversation of 12 is run by %s", tc.nodes[caller].id)
	}
	runs := lines(marker)
	go func() {
		code, b := tc.api(caller, http.MethodPost, "/v1/chat", orchestrator.ChatRequest{ConversationID: conv, Text: "again"})
		done <- result{code, b}
	}()
	testenv.Eventually(t, clusterWait, func() bool { return lines(marker) == runs+1 }, "the call starts on pi1")
	// One node holds the call in flight, the holder, not the caller.
	if got := [2]int64{agentInFlight(t, tc, hi, "pi1"), agentInFlight(t, tc, caller, "pi1")}; got != [2]int64{1, 0} {
		t.Errorf("pi1's calls in flight on its holder and on the caller = %v, want [1 0]", got)
	}
	tc.procs[hi].kill()
	r = <-done
	var ok orchestrator.ChatResponse
	if err := json.Unmarshal(r.body, &ok); err != nil || r.code != http.StatusOK || ok.Text != "tool said slept 2" {
		t.Fatalf("chat whose agent's holder died: status %d, body %s", r.code, r.body)
	}
	if n := lines(marker); n != runs+1 {
		t.Errorf("the tool ran %d times for one call", n-runs)
	}
	if s, _ := tc.status(caller); s.Cluster == nil || s.Cluster.CallsMoved == 0 {
		t.Errorf("%s placed no call again after pi1's holder died", tc.nodes[caller].id)
	}
	if h := agentHolder(t, tc, caller, "pi1"); h != tc.nodes[caller].id {
		t.Errorf("pi1's calls are held by %q, want the survivor %s", h, tc.nodes[caller].id)
	}
}

// agentHolder is the node that node i says holds agent's calls.
func agentHolder(t *testing.T, tc *testCluster, i int, agent string) string {
	t.Helper()
	return agentStatus(t, tc, i, agent).Node
}

// agentInFlight is how many calls node i says wait on agent.
func agentInFlight(t *testing.T, tc *testCluster, i int, agent string) int64 {
	t.Helper()
	return agentStatus(t, tc, i, agent).InFlight
}

// agentStatus is agent as node i's status shows it (zero when absent).
func agentStatus(t *testing.T, tc *testCluster, i int, agent string) orchestrator.AgentStatus {
	t.Helper()
	code, b := tc.api(i, http.MethodGet, "/v1/status", nil)
	var s orchestrator.Status
	if code != http.StatusOK || json.Unmarshal(b, &s) != nil {
		t.Fatalf("status of %s: %d %s", tc.nodes[i].id, code, b)
	}
	for _, a := range s.Agents {
		if a.ID == agent {
			return a
		}
	}
	return orchestrator.AgentStatus{}
}

// TestClusterJobRunsOnce: three nodes declare the same job (@every 1m,
// the shortest schedule); each instant is claimed in sqld and run by one
// node only. The node that ran the first instant is SIGKILLed; the next
// instant runs once, on a survivor. About two minutes: it waits for two
// instants of a one-minute job.
func TestClusterJobRunsOnce(t *testing.T) {
	t.Parallel() // a slow test that mostly waits: see "Slow tests run in parallel" in cluster_test.go
	if testing.Short() {
		t.Skip("waits for two instants of a one-minute job")
	}
	state := sqldtest.Start(t, sqldtest.Options{})
	tc := newTestCluster(t, 3, fmt.Sprintf("state_url = %q\n[[jobs]]\nid = \"tick\"\nschedule = \"@every 1m\"\nprompt = \"say tick\"\nmissed = \"skip\"\n", state.URL()))
	tc.startAll()
	// runs returns the instants (unix ms) of the job's runs each of the
	// nodes in idx recorded, by node, and the outcomes.
	runs := func(idx []int) (map[int64][]string, []string) {
		by := map[int64][]string{}
		var outcomes []string
		for _, i := range idx {
			audit := filepath.Join(tc.nodes[i].dir, orchestrator.AuditFile)
			for _, row := range query(t, audit, "SELECT scheduled_ms, COALESCE(outcome, 'running') FROM job_runs WHERE job_id = 'tick'") {
				by[row[0].(int64)] = append(by[row[0].(int64)], tc.nodes[i].id)
				outcomes = append(outcomes, row[1].(string))
			}
		}
		return by, outcomes
	}
	all := []int{0, 1, 2}
	testenv.Eventually(t, 2*time.Minute, func() bool {
		time.Sleep(200 * time.Millisecond) // one look at the trails per 200ms
		by, _ := runs(all)
		return len(by) >= 1
	}, "a node runs the job's first instant")
	time.Sleep(3 * time.Second) // every node has ticked past the instant by now
	by, outcomes := runs(all)
	var first int64
	for at, nodes := range by {
		if len(nodes) != 1 {
			t.Fatalf("instant %d recorded by %v, want one node", at, nodes)
		}
		first = max(first, at)
	}
	if len(by) != 1 {
		t.Fatalf("%d instants recorded after the first: %v", len(by), by)
	}
	t.Logf("first instant %s ran on %s (%v)", time.UnixMilli(first).UTC().Format(time.TimeOnly), by[first][0], outcomes)
	vi := slices.IndexFunc(tc.nodes, func(s clusterNodeSpec) bool { return s.id == by[first][0] })
	tc.procs[vi].kill()
	alive, aliveIDs := tc.others(vi)
	testenv.Eventually(t, 2*time.Minute, func() bool {
		time.Sleep(200 * time.Millisecond)
		by, _ := runs(alive)
		return len(by) >= 1
	}, "a survivor runs the next instant")
	time.Sleep(3 * time.Second)
	after, outcomes := runs(alive)
	for at, nodes := range after {
		if at <= first {
			t.Errorf("instant %d, not after the first (%d), ran again on %v", at, first, nodes)
		}
		if len(nodes) != 1 {
			t.Errorf("instant %d recorded by %v, want one node", at, nodes)
		}
	}
	if len(after) != 1 {
		t.Fatalf("survivors %v recorded %d instants: %v", aliveIDs, len(after), after)
	}
	t.Logf("next instant ran on %v (%v)", after, outcomes)
	var claims int
	db := openState(t, state.URL())
	if err := db.QueryRow("SELECT COUNT(*) FROM cluster_job_runs WHERE job_id = 'tick'").Scan(&claims); err != nil || claims != 2 {
		t.Fatalf("%d claims in sqld (%v), want 2", claims, err)
	}
}

// stream posts a streamed chat to node i and hands each event's data to
// on, in order, while the stream is open; it returns the answer's text.
func (tc *testCluster) stream(i int, conv, text string, on func(p actors.Progress)) string {
	tc.t.Helper()
	dir := tc.nodes[i].dir
	addr, err1 := os.ReadFile(filepath.Join(dir, orchestrator.HTTPAddrFile))
	token, err2 := os.ReadFile(filepath.Join(dir, orchestrator.HTTPTokenFile))
	if err1 != nil || err2 != nil {
		tc.t.Fatalf("%s: no API address or token", tc.nodes[i].id)
	}
	b, _ := json.Marshal(orchestrator.ChatRequest{ConversationID: conv, Text: text, Stream: true})
	req, err := http.NewRequest(http.MethodPost, strings.TrimSpace(string(addr))+"/v1/chat", bytes.NewReader(b))
	if err != nil {
		tc.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tc.t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var p actors.Progress
		if json.Unmarshal([]byte(data), &p) == nil && p.Kind != "" {
			on(p)
		}
		var a orchestrator.ChatResponse
		if json.Unmarshal([]byte(data), &a) == nil && a.Text != "" {
			answer = a.Text
		}
	}
	return answer
}

// TestClusterQuestionsAndApprovals: a chat streamed through one node runs
// on its conversation's owner; the question it asks and the approval its
// gated call waits for are answered, read and decided through a node that
// owns neither, which hands them to the owner through the cluster; every
// node lists the pending approval, naming its owner.
func TestClusterQuestionsAndApprovals(t *testing.T) {
	state := sqldtest.Start(t, sqldtest.Options{})
	dir := t.TempDir()
	transcript := writeTranscript(t, dir, "asking", []map[string]any{
		{"content": "asking", "tool_calls": []map[string]any{{"id": "q1", "name": orchestrator.ToolQuestion, "arguments": map[string]string{"question": "which tank?"}}}},
		{"content": "filling {{result q1}}"},
		{"content": "listing", "tool_calls": []map[string]any{{"id": "a1", "name": orchestrator.ToolAgentsList, "arguments": map[string]string{}}}},
		{"content": "listed"},
	})
	tc := newTestCluster(t, 3, fmt.Sprintf("state_url = %q\n[llm]\nprovider = \"scripted\"\ntranscript = %q\n[[approvals.rules]]\ntools = [%q]\n",
		state.URL(), transcript, orchestrator.ToolAgentsList))
	tc.startAll()
	db := openState(t, state.URL())
	// A node that owns none of it: not the owner, not the streaming node
	// when there is a choice.
	elsewhere := func() (int, string) {
		o := owners(t, db, "conv-q")
		if len(o) == 0 {
			t.Fatal("the conversation has no stored message while it runs")
		}
		for _, i := range []int{1, 2, 0} {
			if tc.nodes[i].id != o[0] {
				return i, o[0]
			}
		}
		return -1, ""
	}

	var asked bool
	got := tc.stream(0, "conv-q", "fill the tank", func(p actors.Progress) {
		if p.Kind != actors.ProgressQuestion {
			return
		}
		asked = true
		via, owner := elsewhere()
		if code, body := tc.api(via, http.MethodPost, "/v1/chat/questions/"+p.QuestionID, orchestrator.AnswerRequest{Answer: "the blue one"}); code != http.StatusNoContent {
			t.Errorf("answer through %s (owner %s): status %d: %s", tc.nodes[via].id, owner, code, body)
		}
		for i := range tc.nodes {
			if code, _ := tc.api(i, http.MethodPost, "/v1/chat/questions/"+p.QuestionID, orchestrator.AnswerRequest{Answer: "again"}); code != http.StatusNotFound {
				t.Errorf("a second answer through %s: status %d, want 404", tc.nodes[i].id, code)
			}
		}
	})
	if !asked || got != "filling the blue one" {
		t.Fatalf("asked %v, answer %q", asked, got)
	}

	var waited bool
	got = tc.stream(0, "conv-q", "list the agents", func(p actors.Progress) {
		if p.Kind != actors.ProgressApprovalWait || p.ApprovalID == "" {
			return
		}
		waited = true
		via, owner := elsewhere()
		// Pending on the owner, listed by every node, naming it.
		for i := range tc.nodes {
			code, body := tc.api(i, http.MethodGet, "/v1/approvals", nil)
			var page orchestrator.ApprovalsPage
			if code != http.StatusOK || json.Unmarshal(body, &page) != nil || page.Partial ||
				!slices.ContainsFunc(page.Approvals, func(a persistence.Approval) bool { return a.ID == p.ApprovalID && a.Node == owner }) {
				t.Errorf("approvals listed through %s (owner %s): status %d: %s", tc.nodes[i].id, owner, code, body)
			}
		}
		code, body := tc.api(via, http.MethodGet, "/v1/approvals/"+p.ApprovalID, nil)
		var a persistence.Approval
		if code != http.StatusOK || json.Unmarshal(body, &a) != nil || !strings.HasPrefix(a.RequestID, "tool-"+owner+".") || a.State != persistence.ApprovalPending {
			t.Errorf("approval read through %s (owner %s): status %d: %s", tc.nodes[via].id, owner, code, body)
		}
		code, body = tc.api(via, http.MethodPost, "/v1/approvals/"+p.ApprovalID+"/approve", orchestrator.DecisionRequest{By: "ops"})
		if code != http.StatusOK || json.Unmarshal(body, &a) != nil || a.State != persistence.ApprovalApproved || a.DecidedBy != "ops" {
			t.Errorf("approve through %s (owner %s): status %d: %s", tc.nodes[via].id, owner, code, body)
		}
		if code, body := tc.api(via, http.MethodPost, "/v1/approvals/"+p.ApprovalID+"/deny", orchestrator.DecisionRequest{By: "ops"}); code != http.StatusConflict {
			t.Errorf("a second decision through %s: status %d, want 409: %s", tc.nodes[via].id, code, body)
		}
	})
	if !waited || got != "listed" {
		t.Fatalf("waited %v, answer %q", waited, got)
	}
	for i := range tc.nodes {
		if code, _ := tc.api(i, http.MethodGet, "/v1/approvals/apr-0000000000000000", nil); code != http.StatusNotFound {
			t.Errorf("an unknown approval through %s: status %d, want 404", tc.nodes[i].id, code)
		}
	}
	// An id no node could have is not asked about: the other nodes drop a
	// request whose id is over 128 bytes unanswered, and each of these
	// waited 5 s for each of them (and logged a line for each).
	long := strings.Repeat("f", 200)
	for _, req := range []struct{ method, path string }{
		{http.MethodPost, "/v1/approvals/apr-" + long + "/approve"},
		{http.MethodGet, "/v1/approvals/apr-" + long},
		{http.MethodPost, "/v1/chat/questions/q-" + long},
	} {
		var body any
		if req.method == http.MethodPost {
			body = orchestrator.DecisionRequest{By: "ops"}
			if strings.Contains(req.path, "questions") {
				body = orchestrator.AnswerRequest{Answer: "x"}
			}
		}
		start := time.Now()
		code, msg := tc.api(1, req.method, req.path, body)
		if d := time.Since(start); code != http.StatusNotFound || d >= 5*time.Second {
			t.Errorf("%s %.40s...: status %d after %v, want 404 without asking the other nodes: %s", req.method, req.path, code, d, msg)
		}
	}
	var forwarded int64
	for i := range tc.nodes {
		if s, ok := tc.status(i); ok && s.Cluster != nil {
			forwarded += s.Cluster.APIForwarded
		}
	}
	if forwarded < 4 { // the answer, the read, the approval, the refused second decision
		t.Errorf("%d API requests handed to another node, want at least 4", forwarded)
	}
}
