package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// evoclawBinary is the binary the edge agents of these tests run as.
func evoclawBinary(t *testing.T) string { return evoclawtest.Binary(t) }

func TestMain(m *testing.M) { evoclawtest.Main(m) }

// startEdge runs `evoclaw edge` with the e2e test skill and waits until it
// says it is ready.
func startEdge(t *testing.T, id, brokerURL string) *proc {
	t.Helper()
	return startEdgeWith(t, id, brokerURL, "")
}

// startEdgeWith is startEdge with extra agent.toml lines appended.
func startEdgeWith(t *testing.T, id, brokerURL, extra string) *proc {
	t.Helper()
	skills, err := filepath.Abs("../../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "agent.toml")
	writeTestFile(t, conf, fmt.Sprintf("agent_id = %q\ndata_dir = \"data\"\nheartbeat_interval = \"1s\"\n[mqtt]\nbroker = %q\n[skills]\ndirs = [%q]\n%s", id, brokerURL, skills, extra))
	p, _ := startProc(t, procSpec{Within: 20 * time.Second}, "edge", "--config", conf)
	return p
}

func startNode(t *testing.T, brokerURL, transcript string) *orchestrator.Node {
	t.Helper()
	p, err := scripted.Parse([]byte(transcript))
	if err != nil {
		t.Fatal(err)
	}
	cfg := orchestrator.Config{DataDir: t.TempDir(), Broker: orchestrator.BrokerConf{URL: brokerURL}}
	if brokerURL == "" {
		cfg.Broker.Listen = "127.0.0.1:0"
		cfg.Broker.AllowAnonymous = true // the edge processes of these tests connect without credentials
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	node, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return node
}

// nodeWithAgent returns once an agent is online at node (node.WaitForAgents:
// no polling of its own), with a context that ends within d of the call,
// and with the test.
func nodeWithAgent(t *testing.T, node *orchestrator.Node, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	if err := node.WaitForAgents(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func query(t *testing.T, db, q string) [][]any {
	t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), db, q)
	if err != nil {
		t.Fatalf("query %s: %v", db, err)
	}
	return res.Rows
}

// TestRoundTripOverRealBrokers runs orchestrator → broker → edge process →
// tool binary → back, against the embedded broker and mosquitto, and checks
// both audit trails name the same request.
func TestRoundTripOverRealBrokers(t *testing.T) {
	for _, b := range mqtttest.Brokers(t) {
		t.Run(b.Name, func(t *testing.T) {
			counter := filepath.Join(t.TempDir(), "count")
			transcript := fmt.Sprintf(`{"name":"rt","turns":[
			  {"content":"","tool_calls":[{"id":"c1","name":"edge-a__count","arguments":{"file":%q}}]},
			  {"content":"count is {{result c1}}"}]}`, counter)
			node := startNode(t, b.URL, transcript)
			edge := startEdge(t, "edge-a", b.URL)
			ctx := nodeWithAgent(t, node, 20*time.Second)
			ans, err := node.Chat(ctx, "rt", "count once")
			if err != nil {
				t.Fatal(err)
			}
			if ans.Text != "count is 1" {
				t.Fatalf("answer %q", ans.Text)
			}
			rows := query(t, node.AuditPath(), `SELECT request_id, status, agent_id FROM tool_calls WHERE conversation_id='rt'`)
			if len(rows) != 1 || rows[0][1] != "success" || rows[0][2] != "edge-a" {
				t.Fatalf("orchestrator audit %v", rows)
			}
			edgeDB := filepath.Join(filepath.Dir(edge.cmd.Args[3]), "data", "audit.db")
			erows := query(t, edgeDB, `SELECT request_id, status, exit_code, conversation_id FROM tool_calls`)
			if len(erows) != 1 || erows[0][0] != rows[0][0] || erows[0][1] != "success" || fmt.Sprint(erows[0][2]) != "0" || erows[0][3] != "rt" {
				t.Fatalf("edge audit %v, orchestrator request %v", erows, rows[0][0])
			}
		})
	}
}

// TestEdgeCallPromptChain: the orchestrator's model calls edge_call in
// natural language; the edge process answers with its own scripted model,
// which calls two of its local tools; the answer flows back, and both audit
// databases show the chain under one request_id.
func TestEdgeCallPromptChain(t *testing.T) {
	for _, b := range mqtttest.Brokers(t) {
		t.Run(b.Name, func(t *testing.T) {
			dir := t.TempDir()
			counter := filepath.Join(dir, "count")
			edgeTranscript := filepath.Join(dir, "edge-transcript.json")
			if err := os.WriteFile(edgeTranscript, []byte(fmt.Sprintf(`{"name":"edge","turns":[
			  {"content":"","tool_calls":[{"id":"c1","name":"count","arguments":{"file":%q}},
			                              {"id":"c2","name":"echo_args","arguments":{"message":"from the edge"}}]},
			  {"content":"edge counted {{result c1}} and echoed {{result c2}}"}]}`, counter)), 0o600); err != nil {
				t.Fatal(err)
			}
			node := startNode(t, b.URL, `{"name":"orch","turns":[
			  {"content":"","tool_calls":[{"id":"e1","name":"edge_call","arguments":{"agent_id":"edge-p","query":"count and echo, please"}}],
			   "expect_tools":["edge_call"]},
			  {"content":"The edge says: {{result e1}}"}]}`)
			edge := startEdgeWith(t, "edge-p", b.URL, fmt.Sprintf("[llm]\nprovider = \"scripted\"\ntranscript = %q\n", edgeTranscript))
			ctx := nodeWithAgent(t, node, 30*time.Second)
			ans, err := node.Chat(ctx, "chain", "ask the edge")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ans.Text, "The edge says: edge counted 1 and echoed") || !strings.Contains(ans.Text, "from the edge") ||
				!strings.Contains(ans.Text, "ran: count ok, echo_args ok") {
				t.Fatalf("answer %q", ans.Text)
			}
			rows := query(t, node.AuditPath(), `SELECT request_id, tool, status, agent_id FROM tool_calls WHERE conversation_id='chain'`)
			if len(rows) != 1 || rows[0][1] != "edge_call" || rows[0][2] != "success" || rows[0][3] != "edge-p" {
				t.Fatalf("orchestrator audit %v", rows)
			}
			rid := rows[0][0]
			edgeDB := filepath.Join(filepath.Dir(edge.cmd.Args[3]), "data", "audit.db")
			erows := query(t, edgeDB, `SELECT tool, status, side FROM tool_calls WHERE request_id = '`+fmt.Sprint(rid)+`' ORDER BY tool`)
			want := "[[count success edge] [echo_args success edge] [prompt success edge]]"
			if fmt.Sprint(erows) != want {
				t.Fatalf("edge audit under request %v: %v, want %s", rid, erows, want)
			}
		})
	}
}

// TestEdgeKilledMidCall SIGKILLs the agent while its tool runs: the loop
// gets a typed error well within the tool's timeout, and the conversation ends.
func TestEdgeKilledMidCall(t *testing.T) {
	for _, b := range mqtttest.Brokers(t) {
		t.Run(b.Name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "started")
			transcript := fmt.Sprintf(`{"name":"kill","turns":[
			  {"content":"","tool_calls":[{"id":"c1","name":"edge-k__hang","arguments":{"marker":%q}}]},
			  {"content":"got: {{result c1}}"}]}`, marker)
			node := startNode(t, b.URL, transcript)
			edge := startEdge(t, "edge-k", b.URL)
			ctx := nodeWithAgent(t, node, 30*time.Second)
			go func() {
				// Kill the agent as soon as its tool has started.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if _, err := os.Stat(marker); err == nil {
						break
					}
				}
				edge.kill()
			}()
			start := time.Now()
			ans, err := node.Chat(ctx, "kill", "hang")
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if !strings.Contains(ans.Text, "Error (agent_offline)") && !strings.Contains(ans.Text, "Error (timeout)") {
				t.Fatalf("answer %q, want an agent_offline or timeout error", ans.Text)
			}
			if took > 20*time.Second {
				t.Fatalf("error after %s, beyond the tool's 20 s timeout", took)
			}
			t.Logf("%s: typed error %q after %s", b.Name, strings.SplitN(ans.Text, ":", 3)[1], took.Round(time.Millisecond))
		})
	}
}

// TestRedeliveredCommandRunsOnce publishes the same tool command twice, as
// a QoS 1 redelivery would: the tool runs once and both replies are equal.
func TestRedeliveredCommandRunsOnce(t *testing.T) {
	url := mqtttest.StartEmbedded(t)
	startEdge(t, "edge-d", url)
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "test-dedupe"}, "edge-d")
	counter := filepath.Join(t.TempDir(), "count")
	params, _ := json.Marshal(map[string]string{"file": counter})
	cmd, err := wire.NewCommand(wire.CmdTool, "dup-1", wire.ToolPayload{Tool: "count", Parameters: params})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cmd)
	var results []wire.ToolResult
	for i := 0; i < 2; i++ {
		k.Send(string(b))
		// The second copy arrives after the first finished, as a
		// redelivery after a lost ack would.
		res, err := wire.DecodeToolResult(k.AwaitN("dup-1", i+1)[i])
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	got, err := os.ReadFile(counter)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(got), "\n"); lines != 1 {
		t.Fatalf("tool ran %d times, want 1", lines)
	}
	if results[0].Result != "1\n" || results[1].Result != results[0].Result || results[1].ElapsedMS != results[0].ElapsedMS {
		t.Fatalf("replies differ: %+v vs %+v", results[0], results[1])
	}
}

// TestDemo runs the README's first command as a user would and checks what
// it promises: exit 0, an answer, and an audit trail queryable afterwards.
func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evoclaw-demo")
	cmd := exec.Command(evoclawBinary(t), "demo", "--data-dir", dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	text := out.String()
	for _, want := range []string{"scripted (offline transcript, not a language model)", "pi-kitchen", "pi-garage", "hostname:", "use:", "(3 rows)"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	rows := query(t, filepath.Join(dir, "audit.db"), `SELECT count(*), sum(status='success') FROM tool_calls`)
	if fmt.Sprint(rows[0][0]) != "3" || fmt.Sprint(rows[0][1]) != "3" {
		t.Fatalf("orchestrator audit rows %v, want 3 successes", rows)
	}
	var edgeIDs []string
	for _, a := range []string{"pi-kitchen", "pi-garage"} {
		for _, r := range query(t, filepath.Join(dir, "agents", a, "audit.db"), `SELECT request_id FROM tool_calls`) {
			edgeIDs = append(edgeIDs, fmt.Sprint(r[0]))
		}
	}
	orch := query(t, filepath.Join(dir, "audit.db"), `SELECT request_id FROM tool_calls ORDER BY request_id`)
	if len(edgeIDs) != len(orch) {
		t.Fatalf("edge request ids %v vs orchestrator %v", edgeIDs, orch)
	}
	for _, r := range orch {
		found := false
		for _, id := range edgeIDs {
			found = found || id == r[0]
		}
		if !found {
			t.Fatalf("orchestrator request %v has no edge record", r[0])
		}
	}
}
