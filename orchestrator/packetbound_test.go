package orchestrator

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestNodeNeverReadsAnOversizedPacket: behind an external broker that
// takes packets of any size (mosquitto's default), a client publishing
// 64 MiB on an agent's reports topic gets the node's session closed before
// the node allocates the packet, and the node connects again. Before, paho
// allocated the whole packet as announced, and the node decoded it only to
// refuse it for its size.
func TestNodeNeverReadsAnOversizedPacket(t *testing.T) {
	url, logs := mqtttest.StartMosquittoConf(t, mqtttest.AnonymousConf)
	cfg, _ := loadConfig(t, t.TempDir(), fmt.Sprintf("data_dir = \"data\"\n[broker]\nurl = %q\n", url), "")
	n := startNode(t, cfg, Options{})
	testenv.Eventually(t, 10*time.Second, n.client.Connected, "the node's MQTT session")

	const size = 64 << 20
	topic := wire.ReportsTopic("hostile")
	conn, code := mqtttest.DialRaw(t, strings.TrimPrefix(url, "tcp://"), mqtttest.RawConnect{ClientID: "hostile"})
	if code != 0 {
		t.Fatalf("CONNACK %d", code)
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	head := append(mqtttest.RawHeader(0x30, 2+len(topic)+size), byte(len(topic)>>8), byte(len(topic)))
	if _, err := conn.Write(append(head, topic...)); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < size; sent += len(chunk) {
		if _, err := conn.Write(chunk); err != nil {
			t.Fatalf("publish, after %d bytes: %v", sent, err)
		}
	}

	node := "evoclaw-orchestrator-" + cfg.NodeID
	testenv.Eventually(t, 20*time.Second, func() bool {
		for _, l := range strings.Split(logs(), "\n") {
			if strings.Contains(l, node) && (strings.Contains(l, "closed its connection") || strings.Contains(l, "disconnected")) {
				return true
			}
		}
		return false
	}, "the node dropping the session that carried the packet")
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > size/4 {
		t.Fatalf("the process allocated %d MiB while a %d MiB packet was refused", grew>>20, size>>20)
	}
	testenv.Eventually(t, 20*time.Second, n.client.Connected, "the node's MQTT session again")
}
