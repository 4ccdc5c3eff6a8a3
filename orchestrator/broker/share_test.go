package broker_test

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

// TestSharedReportsOnEveryBroker: clustered nodes read the agents'
// reports through a shared subscription. Two orchestrator sessions in one
// group get each report of bob once between them, on the embedded broker
// and on mosquitto with the shipped ACL; an agent's shared subscription
// to the reports gets none of them.
func TestSharedReportsOnEveryBroker(t *testing.T) {
	const filter = "$share/evoclaw-test/" + wire.TopicPrefix + "+/" + wire.KindReports
	const reports = 20
	for _, kind := range []string{"embedded", "mosquitto"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			sb := startSecured(t, kind)
			var inboxes [2]mqtttest.Inbox
			for i := range inboxes {
				c := sb.client(t, "orchestrator", fmt.Sprintf("evoclaw-orchestrator-node%d", i))
				if err := c.Subscribe(filter, 1, inboxes[i].Handle); err != nil {
					t.Fatalf("node%d: shared subscription: %v", i, err)
				}
			}
			alex, rc := sb.raw(t, "alex-eye", sb.pw["alex-eye"], "")
			if rc != 0 {
				t.Fatalf("CONNACK %d", rc)
			}
			// mochi refuses it (0x80); mosquitto grants it and delivers
			// nothing the agent may not read.
			if code := mqtttest.RawSubscribe(t, alex, "$share/evoclaw-test/"+wire.ReportsTopic("bob")); code != 0x80 && kind == "embedded" {
				t.Errorf("agent's shared SUBSCRIBE to bob's reports: SUBACK %#x, want 0x80", code)
			}
			bob := sb.client(t, "bob", "evoclaw-bob")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := range reports {
				if err := bob.Publish(ctx, mqttMsg(wire.ReportsTopic("bob"), fmt.Sprintf(`{"n":%d}`, i))); err != nil {
					t.Fatal(err)
				}
			}
			count := func() map[string]int {
				got := map[string]int{}
				for i := range inboxes {
					for _, m := range inboxes[i].All() {
						got[string(m.Payload)]++
					}
				}
				return got
			}
			testenv.Eventually(t, 10*time.Second, func() bool { return len(count()) == reports }, "every report reaches the group")
			// What alex receives next must be its own command: nothing of
			// bob's came through its shared subscription before it. By then
			// a duplicate to the group would have arrived too.
			orch := sb.client(t, "orchestrator", "evoclaw-orchestrator-ops")
			if err := orch.Publish(ctx, mqttMsg(wire.CommandsTopic("alex-eye"), `{"for":"alex"}`)); err != nil {
				t.Fatal(err)
			}
			if code := mqtttest.RawSubscribe(t, alex, wire.CommandsTopic("alex-eye")); code != 1 {
				t.Fatalf("SUBSCRIBE to its own commands: SUBACK %#x", code)
			}
			if err := orch.Publish(ctx, mqttMsg(wire.CommandsTopic("alex-eye"), `{"for":"alex","n":2}`)); err != nil {
				t.Fatal(err)
			}
			if topic, payload := mqtttest.RawNextPublish(t, alex, 5*time.Second); topic != wire.CommandsTopic("alex-eye") {
				t.Fatalf("agent alex-eye received %s %s, want only its own commands", topic, payload)
			}
			for p, n := range count() {
				if n != 1 {
					t.Errorf("report %s delivered %d times to the group, want once", p, n)
				}
			}
			t.Logf("the group's two sessions took %d and %d of %d reports", len(inboxes[0].All()), len(inboxes[1].All()), reports)
		})
	}
}

func mqttMsg(topic, payload string) mqttc.Message {
	return mqttc.Message{Topic: topic, Payload: []byte(payload), QoS: 1}
}
