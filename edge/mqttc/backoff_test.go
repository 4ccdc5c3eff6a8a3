package mqttc_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestBackSoonAfterTheBrokerRestarts: a client with an agent's settings
// (MaxReconnectInterval at its default, 30 s) is connected again within
// 1.5 s of its broker coming back after 3.5 s away. paho's backoff tried
// at 0, 1, 3 and 7 s after the loss (jitter aside), so the client was back
// 3.5 s after the broker, and later the longer the outage (15 s after one
// of 20 s).
func TestBackSoonAfterTheBrokerRestarts(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := b.Addr()
	var connects atomic.Int32
	connect(t, b.URL(), func(o *mqttc.Options) {
		o.MaxReconnectInterval = 0 // the default, as on an agent
		o.ReconnectJitter = -1     // no random part: the waits are the middle of their ranges
		o.OnConnect = func(*mqttc.Client) { connects.Add(1) }
	})
	testenv.Eventually(t, waitFor, func() bool { return connects.Load() == 1 }, "connected")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // an outage: what the test is about
	b, err = broker.Start(broker.Options{Listen: addr, AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	back := time.Now()
	testenv.Eventually(t, waitFor, func() bool { return connects.Load() == 2 }, "connected again")
	if d := time.Since(back); d > 1500*time.Millisecond {
		t.Fatalf("connected again %v after the broker came back, want within 1.5 s", d.Round(time.Millisecond))
	}
}
