package broker

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/boundlog"
)

// TestSlowHousekeeping: the broker's server sweeps expired retained
// messages every housekeepingEvery, not every second as mochi does (an
// expired MQTT 5 message is still there after a few of mochi's seconds),
// and the sweep still runs. It fails when a mochi upgrade moves the
// tickers. The server runs in a bubble with no listener, on the bubble's
// clock.
func TestSlowHousekeeping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := newServer(Options{MaxPacketBytes: DefaultMaxPacketBytes}, slog.New(slog.DiscardHandler), boundlog.NewLimiter())
		if err := server.Serve(); err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		const topic = "evoclaw/agents/pi1/status"
		now := time.Now().Unix()
		server.Topics.RetainMessage(packets.Packet{TopicName: topic, Payload: []byte("x"), ProtocolVersion: 5,
			Created: now - 20, Expiry: now - 10,
			FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}})
		retained := func() bool {
			_, ok := server.Topics.Retained.Get(topic)
			return ok
		}
		time.Sleep(housekeepingEvery - time.Second)
		synctest.Wait()
		if !retained() {
			t.Fatalf("the expired retained message went within %v: the broker sweeps more often than every %v", housekeepingEvery-time.Second, housekeepingEvery)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if retained() {
			t.Fatalf("the expired retained message is still there after %v", housekeepingEvery+time.Second)
		}
	})
}

// TestSlowHousekeepingRefusesOtherLayouts: a server whose event loop is
// missing is reported, not dereferenced.
func TestSlowHousekeepingRefusesOtherLayouts(t *testing.T) {
	if err := slowHousekeeping(&mqtt.Server{}, time.Second); !errors.Is(err, errMochiLayout) {
		t.Fatalf("err = %v, want errMochiLayout", err)
	}
}
