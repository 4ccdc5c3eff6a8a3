package broker_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestAgentPublishByteRate: an agent publishing as fast as it can gets
// through at most its burst plus its rate, keeps its connection, and is
// served again once it slows down; an orchestrator identity is not held
// to it. Before the bound, every byte was queued for the subscribers, and
// a slow one grew the node by gigabytes.
func TestAgentPublishByteRate(t *testing.T) {
	users := filepath.Join(t.TempDir(), broker.UsersFileName)
	pw := map[string]string{}
	for name, role := range map[string]broker.Role{"orchestrator": broker.RoleOrchestrator, "bob": broker.RoleAgent} {
		p, err := broker.AddUser(users, name, role, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		pw[name] = p
	}
	const (
		packet = 16 << 10 // MaxPacketBytes: the burst is 16 of them, 256 KiB
		rate   = 64 << 10 // bytes a second
		burst  = 16 * packet
		size   = 8 << 10 // one report
	)
	b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: users, MaxPacketBytes: packet, AgentPublishBytesPerSecond: rate})
	connect := func(name string) *mqttc.Client {
		return mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "evoclaw-" + name, Username: name, Password: pw[name]})
	}
	orch, bob := connect("orchestrator"), connect("bob")
	var got atomic.Int64
	if err := orch.Subscribe(wire.ReportsTopic("bob"), 0, func(m mqttc.Message) { got.Add(int64(len(m.Payload))) }); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, size)
	start := time.Now()
	var sent int64
	for time.Since(start) < time.Second {
		if err := bob.Publish(context.Background(), mqttc.Message{Topic: wire.ReportsTopic("bob"), Payload: payload}); err != nil {
			t.Fatalf("publish after %d bytes: %v", sent, err)
		}
		sent += size
	}
	elapsed := time.Since(start)
	time.Sleep(300 * time.Millisecond) // what got through arrives
	allowed := int64(burst) + int64(rate*(elapsed+300*time.Millisecond).Seconds()) + size
	if sent < 4*allowed {
		t.Fatalf("the agent published only %d bytes in %v; the test needs a flood well over %d", sent, elapsed, allowed)
	}
	if g := got.Load(); g > allowed {
		t.Errorf("the subscriber got %d of the %d bytes flooded in %v; at most %d should pass", g, sent, elapsed, allowed)
	} else if g < burst/2 {
		t.Errorf("the subscriber got only %d bytes; the burst (%d) should pass", g, burst)
	}
	if !bob.Connected() {
		t.Fatal("the agent lost its connection for going over its rate")
	}
	// Slowed down, it is served again.
	time.Sleep(time.Second)
	before := got.Load()
	if err := bob.Publish(context.Background(), mqttc.Message{Topic: wire.ReportsTopic("bob"), Payload: payload, QoS: 1}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return got.Load() > before }, "a report after a pause is delivered")
	// The orchestrator's commands are not held to an agent's rate.
	var cmds atomic.Int64
	if err := bob.Subscribe(wire.CommandsTopic("bob"), 0, func(m mqttc.Message) { cmds.Add(int64(len(m.Payload))) }); err != nil {
		t.Fatal(err)
	}
	const commands = 2 * burst / size
	for range commands {
		if err := orch.Publish(context.Background(), mqttc.Message{Topic: wire.CommandsTopic("bob"), Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return cmds.Load() == commands*size }, "every command is delivered")
}
