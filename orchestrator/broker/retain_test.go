package broker_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestRetainedCommandRefused: a command published retained would be
// replayed at every start of the agent (a retained shutdown is a restart
// loop). The broker refuses it like a publish outside the sender's topics:
// the sender is disconnected, nothing is kept, and it is logged.
func TestRetainedCommandRefused(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, Logger: logs.Logger(slog.LevelDebug)})
	shutdown := `{"command":"shutdown","payload":{},"request_id":"retained-1"}`

	ops, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "ops-retain", Username: "ops", Password: "ops-pw"})
	if rc != 0 {
		t.Fatalf("ops CONNECT return code %d", rc)
	}
	mqtttest.RawPublish(t, ops, wire.CommandsTopic("bob"), shutdown, true)
	if !mqtttest.RawClosed(ops, 5*time.Second) {
		t.Fatal("an orchestrator publishing a retained command was not disconnected")
	}
	wantLog(t, &logs, "mqtt access denied", "user=ops", "topic="+wire.CommandsTopic("bob"), "commands are never retained")

	// The agent subscribing afterwards gets no retained command: the first
	// message it sees is a live one sent after it subscribed.
	bob := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "evoclaw-bob", Username: "bob", Password: "bob-pw"})
	var inbox mqtttest.Inbox
	if err := bob.Subscribe(wire.CommandsTopic("bob"), 1, inbox.Handle); err != nil {
		t.Fatal(err)
	}
	live := `{"command":"ping","payload":{},"request_id":"live-1"}`
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "ops-live", Username: "ops2", Password: "ops2-pw"}, "bob")
	k.Send(live)
	inbox.Await(t, live)
	if got := inbox.All(); len(got) != 1 {
		t.Fatalf("bob received %d commands, want only the live one: %+v", len(got), got)
	}

	t.Run("retained will on a commands topic", func(t *testing.T) {
		c := mqtttest.RawConnect{ClientID: "ops-will", Username: "ops", Password: "ops-pw",
			WillTopic: wire.CommandsTopic("bob"), WillPayload: shutdown, WillRetain: true}
		if _, rc := mqtttest.DialRaw(t, b.Addr(), c); rc != 5 {
			t.Fatalf("CONNACK return code %d, want 5 (not authorized)", rc)
		}
		wantLog(t, &logs, "mqtt client refused", "client=ops-will", "commands are never retained")
	})
	t.Run("live commands and retained status still pass", func(t *testing.T) {
		c := mqtttest.RawConnect{ClientID: "ops-will2", Username: "ops", Password: "ops-pw", WillTopic: wire.CommandsTopic("bob"), WillPayload: live}
		if _, rc := mqtttest.DialRaw(t, b.Addr(), c); rc != 0 {
			t.Fatalf("a command as a will that is not retained: CONNACK return code %d, want 0", rc)
		}
		alex := agentConn(t, b, "alex-eye", "alex-pw")
		mqtttest.RawPublish(t, alex, wire.StatusTopic("alex-eye"), `{"agent_id":"alex-eye","status":"online"}`, true)
		// Packets are handled in order: a SUBACK means the publish passed.
		if code := mqtttest.RawSubscribe(t, alex, wire.CommandsTopic("alex-eye")); code != 1 {
			t.Fatalf("SUBACK %#x after a retained status, want 1", code)
		}
	})
}

// TestRetainedReportRefused: a report published retained (a forged result,
// a heartbeat) answers no waiting call, and was handed to every session
// that subscribed afterwards: at each start of a node's session it came
// back as a late result, and made an agent long gone look online. The
// broker refuses it as it refuses a retained command, publish and last
// will alike; the agent's retained status and capabilities still pass,
// and so does a report that is not retained.
func TestRetainedReportRefused(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, Logger: logs.Logger(slog.LevelDebug)})
	forged := `{"agent_id":"alex-eye","report_type":"result","payload":{"status":"success","result":"forged","request_id":"r-1"}}`

	alex := agentConn(t, b, "alex-eye", "alex-pw")
	mqtttest.RawPublish(t, alex, wire.ReportsTopic("alex-eye"), forged, true)
	if !mqtttest.RawClosed(alex, 5*time.Second) {
		t.Fatal("an agent publishing a retained report was not disconnected")
	}
	wantLog(t, &logs, "mqtt access denied", "user=alex-eye", "topic="+wire.ReportsTopic("alex-eye"), "reports are never retained")

	c := mqtttest.RawConnect{ClientID: "evoclaw-bob", Username: "bob", Password: "bob-pw",
		WillTopic: wire.ReportsTopic("bob"), WillPayload: forged, WillRetain: true}
	if _, rc := mqtttest.DialRaw(t, b.Addr(), c); rc != 5 {
		t.Fatalf("a retained last will on a reports topic: CONNACK return code %d, want 5 (not authorized)", rc)
	}
	wantLog(t, &logs, "mqtt client refused", "client=evoclaw-bob", "reports are never retained")

	alex = agentConn(t, b, "alex-eye", "alex-pw")
	live := `{"agent_id":"alex-eye","report_type":"heartbeat","payload":{}}`
	mqtttest.RawPublish(t, alex, wire.StatusTopic("alex-eye"), `{"agent_id":"alex-eye","status":"online"}`, true)
	mqtttest.RawPublish(t, alex, wire.CapabilitiesTopic("alex-eye"), `{"agent_id":"alex-eye","capabilities":"eye"}`, true)
	// Packets are handled in order: a SUBACK means the publishes passed.
	if code := mqtttest.RawSubscribe(t, alex, wire.CommandsTopic("alex-eye")); code != 1 {
		t.Fatalf("SUBACK %#x after a retained status and capabilities, want 1", code)
	}
	// A session subscribing now gets the retained status and capabilities,
	// the live report, and nothing retained on reports.
	inbox := watch(t, b, wire.AllAgents("#"))
	mqtttest.RawPublish(t, alex, wire.ReportsTopic("alex-eye"), live, false)
	inbox.Await(t, live)
	for _, m := range inbox.All() {
		if m.Retained && m.Topic == wire.ReportsTopic("alex-eye") || m.Topic == wire.ReportsTopic("alex-eye") && string(m.Payload) == forged {
			t.Fatalf("a report was kept: %+v", m)
		}
	}
	if !inbox.Has(wire.StatusTopic("alex-eye"), `{"agent_id":"alex-eye","status":"online"}`) || !inbox.Has(wire.CapabilitiesTopic("alex-eye"), `{"agent_id":"alex-eye","capabilities":"eye"}`) {
		t.Fatalf("retained status or capabilities missing: %+v", inbox.All())
	}
}
