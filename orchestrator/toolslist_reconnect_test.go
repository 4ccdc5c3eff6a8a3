package orchestrator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// TestToolsListLostBeforeSubscribeIsAskedAgainSoon: an agent that
// reconnects with a clean session is heard first from a report its MQTT
// client sends before it has subscribed to its commands again (a
// heartbeat, or a publish resent on reconnect), so the tools_list that
// brings it online finds no subscriber and is lost. Once the agent says it
// is online (subscribed), it must be asked again soon, not after the
// 10 s tools_list timeout, during which every call to it is refused as
// busy. The loss is made certain by order: a watcher sees the lost
// tools_list pass before the agent subscribes.
func TestToolsListLostBeforeSubscribeIsAskedAgainSoon(t *testing.T) {
	const id = "pi-late-sub"
	p, err := scripted.Parse([]byte(noopTranscript))
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, Config{DataDir: filepath.Join(t.TempDir(), "orch"),
		Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{Provider: p})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	isToolsList := func(m mqttc.Message) bool {
		cmd, err := wire.DecodeCommand(m.Payload)
		return err == nil && cmd.Command == wire.CmdToolsList
	}
	var watched mqtttest.Inbox
	watcher := mqtttest.Connect(t, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "evoclaw-watcher"})
	if err := watcher.Subscribe(wire.CommandsTopic(id), 1, watched.Handle); err != nil {
		t.Fatal(err)
	}

	agent := mqtttest.Connect(t, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "evoclaw-" + id})
	publish := func(topic string, payload any, retained bool) {
		t.Helper()
		b, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := agent.Publish(ctx, mqttc.Message{Topic: topic, Payload: b, QoS: 1, Retained: retained}); err != nil {
			t.Fatal(err)
		}
	}
	hb, err := wire.NewReport(id, "monitor", wire.ReportHeartbeat, time.Now().Unix(), wire.Heartbeat{UptimeSec: 1})
	if err != nil {
		t.Fatal(err)
	}
	publish(wire.ReportsTopic(id), hb, false)
	testenv.Eventually(t, 10*time.Second, func() bool {
		_, ok := watched.Find(isToolsList)
		return ok && node.Catalog().Agents[id].Listing
	}, "the agent online from its report, and a tools_list sent before it subscribed")

	var inbox mqtttest.Inbox
	if err := agent.Subscribe(wire.CommandsTopic(id), 1, inbox.Handle); err != nil {
		t.Fatal(err)
	}
	publish(wire.StatusTopic(id), wire.Status{AgentID: id, Status: wire.PresenceOnline}, true)
	announced := time.Now()

	// The old code asked again only once the lost one timed out (10 s).
	var cmd wire.Command
	testenv.Eventually(t, 5*time.Second, func() bool {
		m, ok := inbox.Find(isToolsList)
		if ok {
			cmd, _ = wire.DecodeCommand(m.Payload)
		}
		return ok
	}, "a tools_list delivered after the agent announced it is subscribed")
	list, err := wire.NewReport(id, "monitor", wire.ReportResult, time.Now().Unix(),
		wire.ToolsList{RequestID: cmd.RequestID, Tools: []wire.ToolInfo{{Name: "noop", Description: "does nothing", TimeoutMS: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	publish(wire.ReportsTopic(id), list, false)
	testenv.Eventually(t, 5*time.Second, func() bool {
		a := node.Catalog().Agents[id]
		return a.Listed && !a.Listing && len(a.Tools) == 1
	}, "the agent's tools listed")
	t.Logf("tools listed %s after the agent announced it is subscribed", time.Since(announced).Round(time.Millisecond))
	if n := len(inbox.All()); n != 1 {
		t.Fatalf("agent received %d commands after subscribing, want the one tools_list", n)
	}
}
