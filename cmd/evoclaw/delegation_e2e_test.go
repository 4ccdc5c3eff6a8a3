package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// TestDelegationOverRealProcesses: two `evoclaw edge` processes, over the
// embedded broker and mosquitto. The node asks edge-d1 in natural
// language; edge-d1's own scripted loop calls edge-d2's echo_args through
// the node ([delegation] allows it) and its count, which no rule gives it
// (not offered, so its model is told the tool does not exist and nothing
// runs). The answer carries edge-d2's output, and the three audit
// databases name the delegated call: edge-d1's loop row, the node's row
// under delegation:edge-d1, edge-d2's row under the node's request_id.
func TestDelegationOverRealProcesses(t *testing.T) {
	for _, b := range mqtttest.Brokers(t) {
		t.Run(b.Name, func(t *testing.T) {
			dir := t.TempDir()
			counter := filepath.Join(dir, "count")
			tr := filepath.Join(dir, "d1.json")
			if err := os.WriteFile(tr, []byte(fmt.Sprintf(`{"name":"d1","turns":[
			  {"content":"","tool_calls":[{"id":"a","name":"edge-d2__echo_args","arguments":{"message":"relayed by d1"}},
			                              {"id":"b","name":"edge-d2__count","arguments":{"file":%q}}],
			   "expect_tools":["edge-d2__echo_args","count"]},
			  {"content":"d2 echoed [{{result a}}] count [{{result b}}]"}]}`, counter)), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := scripted.Parse([]byte(`{"name":"orch","turns":[
			  {"content":"","tool_calls":[{"id":"e1","name":"edge_call","arguments":{"agent_id":"edge-d1","query":"relay to d2"}}]},
			  {"content":"node: {{result e1}}"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			cfg := orchestrator.Config{DataDir: filepath.Join(dir, "node"), Broker: orchestrator.BrokerConf{URL: b.URL},
				Delegation: orchestrator.DelegationConf{Allow: []orchestrator.DelegationRule{{From: "edge-d1", To: "edge-d2", Tools: []string{"echo_*"}}}}}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			node, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Provider: p})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { node.Close() })
			d1 := startEdgeWith(t, "edge-d1", b.URL, fmt.Sprintf("[llm]\nprovider = \"scripted\"\ntranscript = %q\n", tr))
			d2 := startEdge(t, "edge-d2", b.URL)
			testenv.Eventually(t, 20*time.Second, func() bool {
				n := 0
				for _, a := range node.Catalog().Online() {
					if (a.ID == "edge-d1" || a.ID == "edge-d2") && len(a.Tools) > 0 && !a.Listing {
						n++
					}
				}
				return n == 2
			}, "both agents listed")

			ans, err := node.Chat(ctx, "relay", "relay to d2")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ans.Text, "d2 echoed [") || !strings.Contains(ans.Text, "relayed by d1") ||
				!strings.Contains(ans.Text, `tool "edge-d2__count" not found`) {
				t.Fatalf("answer %q", ans.Text)
			}
			if _, err := os.Stat(counter); err == nil {
				t.Fatal("count ran although no rule gives it")
			}
			rows := query(t, node.AuditPath(), `SELECT request_id, agent_id, status, call_id FROM tool_calls
				WHERE conversation_id = 'delegation:edge-d1' AND tool = 'edge-d2__echo_args'`)
			if len(rows) != 1 || rows[0][1] != "edge-d2" || rows[0][2] != "success" || !strings.HasPrefix(fmt.Sprint(rows[0][3]), "dlg-") {
				t.Fatalf("node's rows of the delegated call: %v", rows)
			}
			d2DB := filepath.Join(filepath.Dir(d2.cmd.Args[3]), "data", "audit.db")
			if got := fmt.Sprint(query(t, d2DB, `SELECT tool, status FROM tool_calls WHERE request_id = '`+fmt.Sprint(rows[0][0])+`'`)); got != "[[echo_args success]]" {
				t.Fatalf("edge-d2's row of request %v: %s", rows[0][0], got)
			}
			d1DB := filepath.Join(filepath.Dir(d1.cmd.Args[3]), "data", "audit.db")
			got := fmt.Sprint(query(t, d1DB, `SELECT tool, status FROM tool_calls WHERE tool LIKE 'edge-d2__%' ORDER BY tool`))
			if got != "[[edge-d2__count error] [edge-d2__echo_args success]]" {
				t.Fatalf("edge-d1's rows of its calls: %s", got)
			}
		})
	}
}
