package orchestrator

import (
	"context"
	"encoding/json"
	"testing"
)

// TestStatusMapsToolsToAgents: after a chat that calls an agent's tool, the
// status lists that tool's counters under its agent, the broker's clients,
// and readiness.
func TestStatusMapsToolsToAgents(t *testing.T) {
	node := inProcess(t, "normal")
	if ans, err := node.Chat(context.Background(), "s1", "go"); err != nil || ans.Text != "ok" {
		t.Fatalf("chat: %v %+v", err, ans)
	}
	st := node.Status()
	var agent *AgentStatus
	for i := range st.Agents {
		if st.Agents[i].ID == "bench-edge" {
			agent = &st.Agents[i]
		}
	}
	if agent == nil || len(agent.ToolStats) != len(agent.Tools) {
		t.Fatalf("agents %+v", st.Agents)
	}
	found := false
	for _, ts := range agent.ToolStats {
		if ts.Name == "noop" {
			found = true
			if ts.Calls != 1 || ts.Errors != 0 || ts.MaxMs < 0 || ts.AvgMs < 0 {
				t.Fatalf("noop counters %+v", ts)
			}
		} else if ts.Calls != 0 {
			t.Fatalf("uncalled tool %+v", ts)
		}
	}
	if !found || len(st.NodeTools) != 0 {
		t.Fatalf("tool stats %+v, node tools %+v", agent.ToolStats, st.NodeTools)
	}
	ids := map[string]bool{}
	for _, c := range st.MQTT.Clients {
		ids[c.ID] = true
	}
	if !st.MQTT.Embedded || !st.MQTT.Connected || st.MQTT.ClientCount != len(st.MQTT.Clients) || !ids["evoclaw-orchestrator-orchestrator"] || len(ids) < 2 {
		t.Fatalf("mqtt %+v", st.MQTT)
	}
	if !st.Ready.Ready || st.LLM.Provider == "" || st.LLM.Links == nil || st.AuditWrite.Failing || st.AuditWrite.LastOK.IsZero() {
		t.Fatalf("ready %+v, llm %+v, audit write %+v", st.Ready, st.LLM, st.AuditWrite)
	}
	// The JSON keeps the fields clients read.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"node_id", "broker", "agents", "metrics", "audit", "audit_write", "node_tools", "llm", "mqtt", "ready"} {
		if _, ok := m[k]; !ok {
			t.Errorf("status JSON lacks %q", k)
		}
	}
}
