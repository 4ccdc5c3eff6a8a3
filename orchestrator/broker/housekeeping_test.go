package broker

import (
	"errors"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestSlowHousekeeping: a started broker does not sweep expired retained
// messages every second as mochi does (an expired MQTT 5 message is still
// there after two and a half sweeps of mochi's), and the sweep still runs
// at the period slowHousekeeping sets. It fails when a mochi upgrade moves
// the tickers.
func TestSlowHousekeeping(t *testing.T) {
	b, err := Start(Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const topic = "evoclaw/agents/pi1/status"
	b.server.Topics.RetainMessage(packets.Packet{TopicName: topic, Payload: []byte("x"), ProtocolVersion: 5,
		Created: time.Now().Unix() - 20, Expiry: time.Now().Unix() - 10,
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}})
	retained := func() bool {
		_, ok := b.server.Topics.Retained.Get(topic)
		return ok
	}
	time.Sleep(2500 * time.Millisecond) // mochi's own ticker would have fired twice
	if !retained() {
		t.Fatal("the expired retained message went within 2.5 s: the broker sweeps every second")
	}
	if err := slowHousekeeping(b.server, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return !retained() }, "the sweep removes the expired retained message")
}

// TestSlowHousekeepingRefusesOtherLayouts: a server whose event loop is
// missing is reported, not dereferenced.
func TestSlowHousekeepingRefusesOtherLayouts(t *testing.T) {
	if err := slowHousekeeping(&mqtt.Server{}, time.Second); !errors.Is(err, errMochiLayout) {
		t.Fatalf("err = %v, want errMochiLayout", err)
	}
}
