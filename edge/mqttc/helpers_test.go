package mqttc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
)

// waitFor is how long tests wait for something that should happen at once.
const waitFor = 10 * time.Second

// quietPeriod is how long a test watches for something that must not happen.
const quietPeriod = 500 * time.Millisecond

var clientSeq atomic.Int64

// clientID returns an id unique within the test binary.
func clientID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, clientSeq.Add(1))
}

// forEachBroker runs f against every broker implementation, in parallel
// with other tests.
func forEachBroker(t *testing.T, f func(t *testing.T, b mqtttest.Broker)) {
	t.Parallel()
	mqtttest.ForEachBroker(t, f)
}

// connect connects a client with fast reconnects (edit may change its
// options) and closes it at cleanup.
func connect(t *testing.T, url string, edit func(*mqttc.Options)) *mqttc.Client {
	t.Helper()
	o := mqttc.Options{
		BrokerURL:            url,
		ClientID:             clientID("c"),
		ConnectTimeout:       5 * time.Second,
		MaxReconnectInterval: 100 * time.Millisecond,
	}
	if edit != nil {
		edit(&o)
	}
	return mqtttest.Connect(t, o)
}

// publish publishes m and fails the test on error.
func publish(t *testing.T, c *mqttc.Client, m mqttc.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Publish(ctx, m); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

// subscribed connects a new client to url and subscribes it to filter at
// QoS 1; what arrives collects in the returned inbox.
func subscribed(t *testing.T, url, filter string) *mqtttest.Inbox {
	t.Helper()
	var got mqtttest.Inbox
	if err := connect(t, url, nil).Subscribe(filter, 1, got.Handle); err != nil {
		t.Fatal(err)
	}
	return &got
}
