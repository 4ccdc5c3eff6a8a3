package edge

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// count runs a query returning one number on the agent's database.
func count(t *testing.T, db, q string) string {
	t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), db, q)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(res.Rows[0][0])
}

// TestReportKeptWhileTheBrokerIsDownIsDeliveredLater: the broker dies
// while a tool runs; its report is kept in the outbox, survives a restart
// of the agent too, and reaches the orchestrator once both are back.
func TestReportKeptWhileTheBrokerIsDownIsDeliveredLater(t *testing.T) {
	mqtttest.ForEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		skills, err := filepath.Abs("../testdata/skills")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		db := filepath.Join(dir, "audit.db")
		cfg := Config{AgentID: "pi-o", DataDir: dir, MQTT: MQTTConf{Broker: b.URL}, Skills: SkillConf{Dirs: []string{skills}}}
		run := func() (stop func() error) {
			a, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			return runAgent(t, a, 15*time.Second)
		}
		// The fake orchestrator: subscribed to the agent's reports, and
		// subscribed again after every reconnect.
		got := make(chan wire.Report, 4)
		ctx := context.Background()
		orch := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL, ClientID: "fake-orchestrator", MaxReconnectInterval: 200 * time.Millisecond})
		if err := orch.Subscribe(wire.ReportsTopic("pi-o"), 1, func(m mqttc.Message) {
			if r, err := wire.DecodeReport("pi-o", m.Payload); err == nil && r.ReportType != wire.ReportHeartbeat {
				got <- r
			}
		}); err != nil {
			t.Fatal(err)
		}

		stop := run()
		cmd := `{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":1.5}},"request_id":"kept-1"}`
		if err := orch.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic("pi-o"), Payload: []byte(cmd), QoS: 1}); err != nil {
			t.Fatal(err)
		}
		// The tool is running: take the broker away.
		testenv.Eventually(t, 10*time.Second, func() bool {
			return count(t, db, `SELECT count(*) FROM request_log WHERE request_id = 'kept-1'`) == "1"
		}, "the command started")
		b.Stop()
		testenv.Eventually(t, 15*time.Second, func() bool {
			return count(t, db, `SELECT count(*) FROM outbox`) == "1"
		}, "the report kept in the outbox")
		if n := count(t, db, `SELECT count(*) FROM tool_calls WHERE request_id = 'kept-1' AND status = 'success'`); n != "1" {
			t.Fatalf("%s audit rows for the run, want 1", n)
		}
		stop() // the agent goes down too, with its report only on disk

		b.Restart()
		testenv.Eventually(t, 15*time.Second, orch.Connected, "orchestrator reconnected")
		// A round trip through the broker shows the subscription is back.
		probe := fmt.Sprintf(`{"agent_id":"pi-o","report_type":"result","payload":{"request_id":"probe"},"timestamp":%d}`, time.Now().Unix())
		testenv.Eventually(t, 15*time.Second, func() bool {
			if orch.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic("pi-o"), Payload: []byte(probe), QoS: 1}) != nil {
				return false
			}
			select {
			case r := <-got:
				return r.RequestID() == "probe"
			case <-time.After(200 * time.Millisecond):
				return false
			}
		}, "orchestrator subscribed again")

		run()
		// A probe published again while an earlier one was still on its way
		// (a slow or emulated machine) may arrive late: it is not the report.
		deadline := time.After(15 * time.Second)
		for kept := false; !kept; {
			select {
			case r := <-got:
				if r.RequestID() == "probe" {
					continue
				}
				res, err := wire.DecodeToolResult(r)
				if err != nil || r.RequestID() != "kept-1" || res.Status != wire.StatusSuccess {
					t.Fatalf("delivered %+v %v", res, err)
				}
				kept = true
			case <-deadline:
				t.Fatal("the kept report never arrived")
			}
		}
		testenv.Eventually(t, 10*time.Second, func() bool {
			return count(t, db, `SELECT count(*) FROM outbox`) == "0"
		}, "the outbox emptied")
	})
}
