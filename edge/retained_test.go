package edge

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

// TestRetainedCommandIgnored: a broker other than the embedded one (here
// mosquitto) keeps a command published retained and delivers it at every
// subscription. A retained shutdown would stop the agent at each start, a
// restart loop under a service manager. The agent ignores it, logs it, and
// keeps serving live commands.
func TestRetainedCommandIgnored(t *testing.T) {
	t.Parallel()
	url, _, _ := mqtttest.StartMosquitto(t)
	pub := mqtttest.Connect(t, mqttc.Options{BrokerURL: url, ClientID: "retainer"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic("pi-ret"), QoS: 1, Retained: true,
		Payload: []byte(`{"command":"shutdown","payload":{},"request_id":"stale-shutdown"}`)}); err != nil {
		t.Fatal(err)
	}

	skills, err := filepath.Abs("../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	a, err := New(Config{AgentID: "pi-ret", DataDir: t.TempDir(), MQTT: MQTTConf{Broker: url}, Skills: SkillConf{Dirs: []string{skills}}},
		logs.Logger(slog.LevelInfo))
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 10*time.Second)
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, "pi-ret")
	testenv.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "ignoring a command delivered retained")
	}, "the retained command logged as ignored")
	if r := k.Ask("live-1", `{"command":"ping","payload":{},"request_id":"live-1"}`); r.ReportType != wire.ReportResult {
		t.Fatalf("ping after the retained shutdown answered %s, want a result", r.ReportType)
	}
	if strings.Contains(logs.String(), "shutdown requested") {
		t.Fatal("the retained shutdown was carried out")
	}
}
