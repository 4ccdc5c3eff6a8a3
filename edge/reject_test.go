package edge

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestAgentRejectsBadMessagesAndLogs sends what no orchestrator should:
// garbage, a command over the decoder's size limit (through a broker that
// lets it pass), an unknown command. Each is logged; the agent keeps
// answering.
func TestAgentRejectsBadMessagesAndLogs(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true, MaxPacketBytes: 2 * wire.MaxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	skills, err := filepath.Abs("../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	dataDir := t.TempDir()
	a, err := New(Config{AgentID: "pi-r", DataDir: dataDir, MQTT: MQTTConf{Broker: b.URL()}, Skills: SkillConf{Dirs: []string{skills}}},
		logs.Logger(slog.LevelInfo))
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 10*time.Second)
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "fake-orchestrator"}, "pi-r")
	tests := []struct{ name, payload, log string }{
		{"garbage", "\x00\xff not json", "rejecting malformed command"},
		{"oversized", `{"command":"ping","request_id":"big","pad":"` + strings.Repeat("x", wire.MaxMessageBytes) + `"}`, fmt.Sprintf("at most %d allowed", wire.MaxMessageBytes)},
		{"unknown command", `{"command":"launch","payload":{},"request_id":"u9"}`, "rejecting unknown command"},
	}
	for i, tt := range tests {
		k.Send(tt.payload)
		testenv.Eventually(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), tt.log) }, tt.name+" logged")
		// Still alive and answering.
		id := "alive-" + string(rune('a'+i))
		if r := k.Ask(id, `{"command":"ping","payload":{},"request_id":"`+id+`"}`); r.ReportType != wire.ReportResult {
			t.Fatalf("ping after %s answered %s, want a result", tt.name, r.ReportType)
		}
	}
	// Audited on the agent, not only logged.
	db := filepath.Join(dataDir, "audit.db")
	testenv.Eventually(t, 10*time.Second, func() bool {
		return count(t, db, `SELECT count(*) FROM events WHERE kind = 'invalid_message' AND agent_id = 'pi-r'`) == "3"
	}, "the three rejections audited as invalid_message events")
	if n := count(t, db, `SELECT count(*) FROM events WHERE kind = 'invalid_message' AND json_extract(detail, '$.command') = 'launch'`); n != "1" {
		t.Fatalf("%s events name the unknown command", n)
	}
}

// TestFullQueueAnswersBusy: back-pressure has a name the orchestrator can
// act on (retry later) rather than a generic failure.
func TestFullQueueAnswersBusy(t *testing.T) {
	p := startAgent(t, func(c *Config) { c.Tools.MaxConcurrent = 1; c.Tools.QueueLen = 1 })
	for _, id := range []string{"b1", "b2", "b3"} {
		p.Send(`{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":1}},"request_id":"` + id + `"}`)
	}
	var busy int
	for _, id := range []string{"b1", "b2", "b3"} {
		r := p.Await(id)
		if r.ReportType != wire.ReportError {
			continue
		}
		e, err := wire.DecodeErrorPayload(r)
		if err != nil || e.ErrorType != wire.ErrBusy {
			t.Fatalf("error report %+v %v, want error type busy", e, err)
		}
		busy++
	}
	if busy != 1 {
		t.Fatalf("%d commands answered busy, want exactly 1", busy)
	}
}
