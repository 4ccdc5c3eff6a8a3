package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// listingAgent is a bare MQTT client posing as agent id on node's broker:
// it answers tools_list with tools, hands every other command to other
// (when not nil), and says it is online. It returns its client.
func listingAgent(t *testing.T, ctx context.Context, node *Node, id string, tools []wire.ToolInfo, other func(wire.Command)) *mqttc.Client {
	t.Helper()
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "fake-" + id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Subscribe(wire.CommandsTopic(id), 1, func(m mqttc.Message) {
		cmd, err := wire.DecodeCommand(m.Payload)
		switch {
		case err != nil:
		case cmd.Command == wire.CmdToolsList:
			r, _ := wire.NewReport(id, "", wire.ReportResult, time.Now().Unix(), wire.ToolsList{RequestID: cmd.RequestID, Tools: tools})
			b, _ := json.Marshal(r)
			go func() { _ = c.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic(id), Payload: b, QoS: 1}) }()
		case other != nil:
			other(cmd)
		}
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(wire.Status{AgentID: id, Status: wire.PresenceOnline})
	if err := c.Publish(ctx, mqttc.Message{Topic: wire.StatusTopic(id), Payload: st, QoS: 1}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOnlineFloodDoesNotMultiplyCommands: an agent that says "online"
// while online (a reconnect) gets its awaited commands again, at most once
// a second however often it says so, and always after the last time it
// did. Every "online" brought every awaited command again before: 7,400 in
// ten seconds made a node publish 81,000 commands, which took every
// message id of its MQTT session (its commands to other agents failed)
// and 900 MB.
func TestOnlineFloodDoesNotMultiplyCommands(t *testing.T) {
	cfg, _ := loadConfig(t, t.TempDir(), fmt.Sprintf("data_dir = \"orch\"\n[broker]\nurl = %q\n", mqtttest.StartEmbedded(t)), "")
	node, err := Start(context.Background(), cfg, Options{Provider: mustScript(t, `{"name":"slow","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"pi1__slow","arguments":{}}]},
	  {"content":"done"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var sent atomic.Int64 // the tool command, each time it comes
	agent := listingAgent(t, ctx, node, "pi1", []wire.ToolInfo{{Name: "slow", TimeoutMS: 30000}}, func(cmd wire.Command) {
		if cmd.Command == wire.CmdTool {
			sent.Add(1)
		}
	})
	testenv.Eventually(t, 10*time.Second, func() bool { _, listed := node.agentTools("pi1"); return listed }, "pi1 listed")
	chatCtx, stopChat := context.WithCancel(ctx)
	defer stopChat()
	go func() { _, _ = node.Chat(chatCtx, "c1", "go") }() // the agent never answers: the call stays awaited
	testenv.Eventually(t, 10*time.Second, func() bool { return sent.Load() == 1 }, "the tool command sent")

	online, _ := json.Marshal(wire.Status{AgentID: "pi1", Status: wire.PresenceOnline})
	const statuses = 300
	start := time.Now()
	for range statuses {
		if err := agent.Publish(ctx, mqttc.Message{Topic: wire.StatusTopic("pi1"), Payload: online, QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// The resend put off by the gap comes after the last "online".
	testenv.Eventually(t, 5*time.Second, func() bool { return sent.Load() >= 3 }, "the command sent again after the last online")
	time.Sleep(1500 * time.Millisecond)
	// The first send, then at most one a second since the flood began,
	// and the one put off.
	if got, most := sent.Load(), 2+int64(time.Since(start)/time.Second)+1; got > most {
		t.Fatalf("the tool command came %d times for 1 call and %d online statuses; want at most %d (once a second)", got, statuses, most)
	}
}
