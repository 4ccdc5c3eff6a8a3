package mqttc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
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

// inbox records messages from a subscription handler without blocking it.
type inbox struct {
	mu   sync.Mutex // guards msgs
	msgs []mqttc.Message
}

func (b *inbox) handle(m mqttc.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
}

func (b *inbox) all() []mqttc.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]mqttc.Message(nil), b.msgs...)
}

// find returns the first message for which match is true.
func (b *inbox) find(match func(mqttc.Message) bool) (mqttc.Message, bool) {
	for _, m := range b.all() {
		if match(m) {
			return m, true
		}
	}
	return mqttc.Message{}, false
}

// await waits for a message with the given payload and returns it.
func (b *inbox) await(t *testing.T, payload string) mqttc.Message {
	t.Helper()
	var got mqttc.Message
	testenv.Eventually(t, waitFor, func() bool {
		var ok bool
		got, ok = b.find(func(m mqttc.Message) bool { return string(m.Payload) == payload })
		return ok
	}, fmt.Sprintf("message %q received", payload))
	return got
}

// subscribed connects a new client to url and subscribes it to filter at
// QoS 1; what arrives collects in the returned inbox.
func subscribed(t *testing.T, url, filter string) *inbox {
	t.Helper()
	var got inbox
	if err := connect(t, url, nil).Subscribe(filter, 1, got.handle); err != nil {
		t.Fatal(err)
	}
	return &got
}
