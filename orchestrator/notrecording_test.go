package orchestrator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestStatusShowsAgentNotRecording: an agent's online status saying its
// audit trail cannot write shows in its /v1/status row and its /v1/agents
// entry until a status says otherwise; a value of another type (a peer's
// field of the same name) reads as absent and the agent stays online.
// The row said online and nothing more.
func TestStatusShowsAgentNotRecording(t *testing.T) {
	cfg, _ := loadConfig(t, t.TempDir(), fmt.Sprintf("data_dir = \"orch\"\n[broker]\nurl = %q\n", mqtttest.StartEmbedded(t)), "")
	node, err := Start(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	agent := listingAgent(t, ctx, node, "pi1", nil, nil)
	row := func() (AgentStatus, AgentDetail) {
		var s AgentStatus
		for _, a := range node.Status().Agents {
			if a.ID == "pi1" {
				s = a
			}
		}
		var d AgentDetail
		for _, a := range node.Agents().Agents {
			if a.ID == "pi1" {
				d = a
			}
		}
		return s, d
	}
	const full = "its disk is full: 12 KiB free"
	for _, tc := range []struct{ name, status, want string }{
		{"not recording", `{"agent_id":"pi1","status":"online","not_recording":"` + full + `"}`, full},
		{"recording again", `{"agent_id":"pi1","status":"online"}`, ""},
		{"not recording again", `{"agent_id":"pi1","status":"online","not_recording":"` + full + `"}`, full},
		{"another type", `{"agent_id":"pi1","status":"online","not_recording":{"since":5}}`, ""},
	} {
		if err := agent.Publish(ctx, mqttc.Message{Topic: wire.StatusTopic("pi1"), Payload: []byte(tc.status), QoS: 1}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 5*time.Second, func() bool {
			s, d := row()
			return s.Online && s.NotRecording == tc.want && d.NotRecording == tc.want
		}, tc.name+": /v1/status and /v1/agents say not_recording "+tc.want)
	}
}
