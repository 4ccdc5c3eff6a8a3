package broker_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestReconnectsLeaveNothingBehind: an agent that reconnects in a loop
// costs the broker nothing once each connection is gone, whether it asks
// for a persistent session or not, says goodbye or not. The broker kept
// what it knew of each client replaced by a newer one of the same id when
// that client had asked for a persistent session (68 KB a connection:
// 3,000 reconnects of one agent took a node from 37 to 100 MB, and on
// without end). A persistent session still keeps what it is sent while
// its client is away. Not parallel: it measures the heap.
func TestReconnectsLeaveNothingBehind(t *testing.T) {
	const reconnects = 200
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: testUsers})
	commands := wire.CommandsTopic("alex-eye")
	for _, tc := range []struct {
		name                   string
		persistent, disconnect bool
	}{
		{"persistent, disconnecting", true, true},
		{"persistent, dropping the connection", true, false},
		{"clean, dropping the connection", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "pi-pass",
				Persistent: tc.persistent, WillTopic: wire.StatusTopic("alex-eye"), WillPayload: `{"agent_id":"alex-eye","status":"offline"}`}
			churn := func(n int) {
				for range n {
					c, rc := mqtttest.DialRaw(t, b.Addr(), agent)
					if rc != 0 {
						t.Fatalf("CONNECT return code %d", rc)
					}
					if tc.disconnect {
						if _, err := c.Write([]byte{0xe0, 0}); err != nil {
							t.Fatal(err)
						}
					}
					c.Close()
				}
			}
			churn(10) // the broker's own first allocations
			before := heapAlloc()
			churn(reconnects)
			// Whatever mochi still holds of the last connections.
			time.Sleep(200 * time.Millisecond)
			if grew := heapAlloc() - before; grew > reconnects*68<<10/4 {
				t.Fatalf("the broker holds %d KiB more after %d reconnects of one agent", grew>>10, reconnects)
			}
			if !tc.persistent {
				return
			}
			// The session still keeps a command sent while the agent is away.
			c, _ := mqtttest.DialRaw(t, b.Addr(), agent)
			if rc := mqtttest.RawSubscribe(t, c, commands); rc != 1 {
				t.Fatalf("SUBACK %d", rc)
			}
			c.Close()
			o := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "orch-" + t.Name(), Username: "orchestrator", Password: "s3cret"})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := o.Publish(ctx, mqttc.Message{Topic: commands, Payload: []byte(`{"command":"ping"}`), QoS: 1}); err != nil {
				t.Fatal(err)
			}
			c, _ = mqtttest.DialRaw(t, b.Addr(), agent)
			if topic, payload := mqtttest.RawNextPublish(t, c, 10*time.Second); topic != commands || payload != `{"command":"ping"}` {
				t.Fatalf("got %s %s after reconnecting, want the command sent while away", topic, payload)
			}
		})
	}
}

// heapAlloc is the heap in use once garbage is collected.
func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
