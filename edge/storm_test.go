package edge

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestHeartbeatsWhileDisconnectedDoNotWarn: while the broker is gone the
// MQTT client logs the loss (within its quota); each heartbeat that cannot
// be sent adds no warning of its own.
func TestHeartbeatsWhileDisconnectedDoNotWarn(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	a, err := New(Config{AgentID: "pi-hb", DataDir: t.TempDir(), MQTT: MQTTConf{Broker: b.URL()},
		HeartbeatInterval: Duration{Duration: 50 * time.Millisecond}}, logs.Logger(slog.LevelInfo))
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 10*time.Second)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "mqtt connection lost") }, "the loss logged")
	time.Sleep(20 * 50 * time.Millisecond) // twenty heartbeats
	if n := strings.Count(logs.String(), "msg=heartbeat"); n > 0 {
		t.Fatalf("%d heartbeat warnings while disconnected:\n%s", n, logs.String())
	}
}
