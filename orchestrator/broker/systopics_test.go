package broker

import (
	"strings"
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// TestNoRetainedSysTopics: a started broker holds no retained $SYS
// message (mochi would copy them every second), and dropping them keeps
// every other retained message.
func TestNoRetainedSysTopics(t *testing.T) {
	b, err := Start(Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sys := func() (n int) {
		for topic := range b.server.Topics.Retained.GetAll() {
			if strings.HasPrefix(topic, mqtt.SysPrefix) {
				n++
			}
		}
		return n
	}
	if n := sys(); n != 0 {
		t.Fatalf("%d retained $SYS messages after start", n)
	}
	for _, topic := range []string{mqtt.SysPrefix + "/broker/uptime", "evoclaw/agents/pi1/status"} {
		b.server.Topics.RetainMessage(packets.Packet{TopicName: topic, Payload: []byte("x"),
			FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}})
	}
	dropSysTopics(b.server)
	if n := sys(); n != 0 {
		t.Fatalf("%d retained $SYS messages after dropSysTopics", n)
	}
	if _, ok := b.server.Topics.Retained.Get("evoclaw/agents/pi1/status"); !ok {
		t.Fatal("dropSysTopics removed an agent's retained status")
	}
}
