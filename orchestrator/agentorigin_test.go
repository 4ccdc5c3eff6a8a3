package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// TestAgentOnlineSaysWhereTheAgentRuns: a node with its embedded broker
// and real edge agents, each new to the node, started one after the
// other: each start is one agent_online event that names the agent's host
// and version (its status comes before anything that could bring it
// online as a report) and says its address or why it is not known.
// Before, about every other start of an agent new to the node made two
// events (the answer to the tools_list its capabilities brought arrived
// before its status), and none named a host.
func TestAgentOnlineSaysWhereTheAgentRuns(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no host name here: %v", err)
	}
	dir := t.TempDir()
	node := startNode(t, Config{DataDir: filepath.Join(dir, "orch"),
		Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{Provider: mustScript(t, noopTranscript)})
	skills := filepath.Join(dir, "skills")
	if _, err := shipped.Install("bench", skills); err != nil {
		t.Fatal(err)
	}
	const starts = 5
	for i := 1; i <= starts; i++ {
		id := fmt.Sprintf("pi-where-%d", i)
		a, err := edge.New(edge.Config{AgentID: id, DataDir: filepath.Join(dir, id), MQTT: edge.MQTTConf{Broker: node.BrokerURL()},
			Skills:  edge.SkillConf{Dirs: []string{skills}},
			Version: fmt.Sprintf("v0.0.%d", i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		testenv.Eventually(t, 10*time.Second, func() bool {
			_, listed := node.agentTools(id)
			return listed
		}, "agent online with its tools")
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 10*time.Second, func() bool {
			return countEvents(t, node, "kind = 'agent_offline' AND agent_id LIKE 'pi-where-%'") == i
		}, "agent offline")
	}
	res := queryAudit(t, node, `SELECT detail FROM events WHERE kind = 'agent_online' AND agent_id LIKE 'pi-where-%' ORDER BY chain_seq`)
	if len(res.Rows) != starts {
		t.Fatalf("%d agent_online events for %d starts: %v", len(res.Rows), starts, res.Rows)
	}
	for i, row := range res.Rows {
		var d map[string]any
		if err := json.Unmarshal([]byte(row[0].(string)), &d); err != nil {
			t.Fatal(err)
		}
		// The node's embedded broker holds the agent's connection: it tells
		// where the connection came from.
		addr, _ := d["address"].(string)
		if d["host"] != wire.BoundText(host, wire.MaxHostLen) || d["version"] != fmt.Sprintf("v0.0.%d", i+1) || !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("start %d: detail %v", i+1, d)
		}
	}
}
