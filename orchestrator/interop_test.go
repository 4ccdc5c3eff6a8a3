package orchestrator

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills/mcptools"
	"github.com/evoclaw/evoclaw/skills/mcptools/mcptest"
)

// actionTranscript calls edge_call in structured mode on agent pub-1.
func actionTranscript(action string) string {
	return `{"name":"action","turns":[
 {"content":"","tool_calls":[{"id":"c1","name":"edge_call","arguments":{"agent_id":"pub-1","action":"` + action + `","params":{}}}]},
 {"content":"{{result c1}}"}]}`
}

// TestPublicAgentWithoutToolsListIsCalledByAction: an agent in the public
// format that does not answer tools_list (or answers it with an error) is
// still called in structured mode: the orchestrator sends the tool command
// and the agent answers, with its own error for an action it lacks.
func TestPublicAgentWithoutToolsListIsCalledByAction(t *testing.T) {
	for _, mode := range []string{"ignore", "error"} {
		t.Run("tools_list="+mode, func(t *testing.T) {
			url, _, _ := mqtttest.StartMosquitto(t)
			for _, tc := range []struct{ action, want string }{
				{"cpu_temp", "41.5C"},
				{"nope", "unknown tool: nope"},
			} {
				node := startExternalNode(t, url, t.TempDir(), actionTranscript(tc.action))
				agent := startPublicAgent(t, url, "pub-1", "--caps", "Pi sensor node: cpu_temp", "--tools-list", mode,
					"--action", "cpu_temp=41.5C", "--heartbeat", "0.3")
				testenv.Eventually(t, 10*time.Second, func() bool { return node.Catalog().Agents["pub-1"].Online }, "agent online")
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				ans, err := node.Chat(ctx, "c-"+tc.action, "temperature?")
				cancel()
				if err != nil || !strings.Contains(ans.Text, tc.want) {
					t.Fatalf("action %s: answer %+v, err %v; want %q", tc.action, ans, err, tc.want)
				}
				if n := len(agent.commands(wire.CmdTool)); n != 1 {
					t.Fatalf("agent got %d tool commands, want 1", n)
				}
				agent.stop()
				node.Close()
			}
		})
	}
}

// TestPublicAgentCallableRightAfterRestart: the public agent publishes no
// status, only its capabilities (retained) and heartbeats. After an
// orchestrator restart the retained capabilities arrive at once; a call made
// then must be tried, not refused as offline until the next heartbeat.
func TestPublicAgentCallableRightAfterRestart(t *testing.T) {
	url, _, _ := mqtttest.StartMosquitto(t)
	dir := t.TempDir()
	first := startExternalNode(t, url, dir, actionTranscript("cpu_temp"))
	startPublicAgent(t, url, "pub-1", "--caps", "Pi sensor node: cpu_temp", "--action", "cpu_temp=41.5C", "--heartbeat", "25")
	testenv.Eventually(t, 10*time.Second, func() bool { return known(first, "pub-1") }, "capabilities")
	first.Close()

	node := startExternalNode(t, url, dir, actionTranscript("cpu_temp"))
	testenv.Eventually(t, 10*time.Second, func() bool { return known(node, "pub-1") }, "retained capabilities after restart")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ans, err := node.Chat(ctx, "after-restart", "temperature?")
	if err != nil || !strings.Contains(ans.Text, "41.5C") {
		t.Fatalf("answer %+v, err %v", ans, err)
	}
	if !node.Catalog().Agents["pub-1"].Online {
		t.Fatal("the agent answered but still counts as offline")
	}
}

// TestToolsListSentOnceOnConnect: an agent that connects (the public format
// with a retained online status, as evoclaw agents send) is asked for its
// tools once, and no late_result is audited for it.
func TestToolsListSentOnceOnConnect(t *testing.T) {
	url, _, _ := mqtttest.StartMosquitto(t)
	for _, order := range []string{"agent first", "node first", "report first"} {
		t.Run(order, func(t *testing.T) {
			dir := t.TempDir()
			var node *Node
			var agent *publicAgent
			id := "pub-" + strings.ReplaceAll(order, " ", "-")
			args := []string{"--status", "--tools-list", "answer", "--action", "cpu_temp=41.5C", "--heartbeat", "0.2"}
			if order == "report first" {
				args = append(args, "--early-report")
			}
			if order == "agent first" {
				agent = startPublicAgent(t, url, id, args...)
				node = startExternalNode(t, url, dir, actionTranscript("cpu_temp"))
			} else {
				node = startExternalNode(t, url, dir, actionTranscript("cpu_temp"))
				agent = startPublicAgent(t, url, id, args...)
			}
			testenv.Eventually(t, 10*time.Second, func() bool { return len(node.Catalog().Agents[id].Tools) == 1 }, "tools listed")
			// Heartbeats and any retained replays pass; nothing more is asked.
			time.Sleep(time.Second) // a window for a duplicate to show, not a wait for an outcome
			if n := len(agent.commands(wire.CmdToolsList)); n != 1 {
				t.Fatalf("agent was sent %d tools_list commands, want 1", n)
			}
			node.Close()
			res, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(dir, AuditFile), `SELECT count(*) FROM events WHERE kind = 'late_result'`)
			if err != nil {
				t.Fatal(err)
			}
			if n := res.Rows[0][0]; n != int64(0) {
				t.Fatalf("%v late_result events", n)
			}
		})
	}
}

// TestAuditedElapsedIsTheRoundTrip: the orchestrator's row of a call holds
// the round trip it observed (a timeout included), with the agent's own
// figure beside it, so `audit report slowest` ranks a timeout above a
// quick success. The agent (public format) reports 2 ms for everything.
func TestAuditedElapsedIsTheRoundTrip(t *testing.T) {
	url, _, _ := mqtttest.StartMosquitto(t)
	transcript := `{"name":"slow","turns":[
 {"content":"","tool_calls":[
   {"id":"c1","name":"edge_call","arguments":{"agent_id":"pub-1","action":"cpu_temp","params":{}}},
   {"id":"c2","name":"edge_call","arguments":{"agent_id":"pub-1","action":"slow","params":{"sleep_ms":700}}},
   {"id":"c3","name":"edge_call","arguments":{"agent_id":"pub-1","action":"slow","params":{"sleep_ms":5000}}}]},
 {"content":"{{result c1}} {{result c2}} {{result c3}}"}]}`
	p, err := scripted.Parse([]byte(transcript))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var short Duration
	short.Duration = 1500 * time.Millisecond
	node, err := Start(context.Background(), Config{DataDir: dir, Broker: BrokerConf{URL: url},
		Loop: LoopConf{Timeouts: map[string]TimeoutConf{"other": {Default: short, Max: short}}}}, Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	startPublicAgent(t, url, "pub-1", "--caps", "Pi sensor node: cpu_temp, slow", "--action", "cpu_temp=41.5C", "--action", "slow=done",
		"--elapsed", "2", "--heartbeat", "0.3")
	testenv.Eventually(t, 10*time.Second, func() bool { return node.Catalog().Agents["pub-1"].Online }, "agent online")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ans, err := node.Chat(ctx, "slow", "go")
	if err != nil || !strings.Contains(ans.Text, "41.5C done") || !strings.Contains(ans.Text, "timed out") {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	node.Close()
	path := filepath.Join(dir, AuditFile)
	res, err := sqlite.QueryReadOnly(context.Background(), path,
		`SELECT call_id, status, coalesce(error_type, ''), elapsed_ms, agent_elapsed_ms FROM tool_calls WHERE side = 'orchestrator' ORDER BY call_id`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("rows %v", res.Rows)
	}
	quick, slow, timedOut := res.Rows[0], res.Rows[1], res.Rows[2]
	if quick[1] != "success" || quick[3].(int64) > 1000 || quick[4] != int64(2) {
		t.Errorf("quick call row %v", quick)
	}
	if slow[1] != "success" || slow[3].(int64) < 700 || slow[4] != int64(2) {
		t.Errorf("slow call row %v: want the observed round trip >= 700 ms and the agent's 2 ms", slow)
	}
	if timedOut[2] != "timeout" || timedOut[3].(int64) < 1500 || timedOut[4] != nil {
		t.Errorf("timed-out call row %v: want the observed wait >= 1500 ms, no agent figure", timedOut)
	}
	rep, ok := sqlite.ReportByName("slowest")
	if !ok {
		t.Fatal("no slowest report")
	}
	top, err := sqlite.QueryReadOnly(context.Background(), path, rep.Query)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Rows) == 0 || top.Rows[0][4] != "error" {
		t.Fatalf("slowest report: %v; want the timeout first", top.Rows)
	}
	if _, err := sqlite.VerifyChain(context.Background(), path); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

// TestOfficialMCPServerAsNodeTool: the official "everything" MCP server
// (npm) as one of the orchestrator's own tool servers: the model calls its
// tools by {server}__{tool}, results and errors come back, a long-running
// operation is cut at the server's timeout_ms, and every call is audited.
func TestOfficialMCPServerAsNodeTool(t *testing.T) {
	cfg := mcptest.Config(t, mcptest.Everything, 1500, "stdio")
	p, err := scripted.Parse([]byte(`{"name":"mcp","turns":[
 {"content":"","tool_calls":[
   {"id":"c1","name":"every__get-sum","arguments":{"a":2,"b":40}},
   {"id":"c2","name":"every__trigger-long-running-operation","arguments":{"duration":20,"steps":2}},
   {"id":"c3","name":"every__get-tiny-image","arguments":{}}]},
 {"content":"{{result c1}} | {{result c2}} | {{result c3}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	node, err := Start(context.Background(), Config{DataDir: dir, HTTP: HTTPConf{Listen: "off"},
		Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}},
		Tools:  ToolsConf{MCPServers: map[string]mcptools.ServerConfig{"every": cfg}}}, Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ans, err := node.Chat(ctx, "mcp", "go")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(ans.Text, " | ")
	if len(parts) != 3 || !strings.Contains(parts[0], "is 42") || !strings.Contains(parts[1], "Error (timeout)") || parts[2] == "" {
		t.Fatalf("answer %q", ans.Text)
	}
	node.Close()
	res, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(dir, AuditFile),
		`SELECT tool, status, coalesce(error_type, ''), elapsed_ms FROM tool_calls ORDER BY call_id`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.Rows[0][1] != "success" || res.Rows[1][2] != "timeout" || res.Rows[1][3].(int64) < 1400 {
		t.Fatalf("audited %v", res.Rows)
	}
}
