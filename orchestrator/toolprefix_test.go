package orchestrator

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestAgentIDThatCannotPrefixToolsIsDropped: the model calls an agent's
// tool as {agent}__{tool}, split again at the first "__". An agent named
// "a__b" (or "a_") made names that read back as another agent's: its tool
// x was offered as "a__b__x", which the node resolved to agent a's tool
// "b__x" (an MCP tool of a's server b). Such an agent's messages are now
// dropped, naming why, and it is never offered.
func TestAgentIDThatCannotPrefixToolsIsDropped(t *testing.T) {
	for _, id := range []string{"a__b", "pi_"} {
		t.Run(id, func(t *testing.T) {
			var logs testenv.Buffer
			dir := t.TempDir()
			node := startNode(t, Config{DataDir: filepath.Join(dir, "orch"),
				Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}},
				Options{Provider: mustScript(t, noopTranscript), Logger: logs.Logger(slog.LevelDebug)})
			// An evoclaw agent refuses such an id (edge.Config); a foreign
			// one, or one from before that rule, says it on the wire.
			c := mqtttest.Connect(t, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "evoclaw-" + id})
			for topic, payload := range map[string]string{
				wire.StatusTopic(id):       `{"agent_id":"` + id + `","status":"online"}`,
				wire.CapabilitiesTopic(id): `{"agent_id":"` + id + `","capabilities":"sensors"}`,
			} {
				if err := c.Publish(context.Background(), mqttc.Message{Topic: topic, Payload: []byte(payload), QoS: 1, Retained: true}); err != nil {
					t.Fatal(err)
				}
			}
			dropped := func() bool {
				for _, line := range strings.Split(logs.String(), "\n") {
					if strings.Contains(line, "dropping message") && strings.Contains(line, "agents/"+id+"/") {
						return true
					}
				}
				return false
			}
			inCatalog := func() bool {
				for _, ag := range node.Catalog().Agents {
					if ag.ID == id {
						return true
					}
				}
				return false
			}
			testenv.Eventually(t, 10*time.Second, func() bool { return dropped() || inCatalog() }, "the node hears of "+id)
			// A well-named agent still joins; the other is not in the
			// catalog beside it.
			startAgent(t, node, filepath.Join(dir, "ok"), testAgent{ID: "a"})
			if inCatalog() {
				t.Fatalf("agent %q is in the catalog: its tools' names would read back as another agent's", id)
			}
			if !dropped() {
				t.Fatalf("no line says why %q's messages were dropped", id)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := node.WaitForAgents(ctx, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}
