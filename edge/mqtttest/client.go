package mqtttest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// Commander stands in for the orchestrator of one agent: an MQTT client
// that publishes raw commands on the agent's commands topic and keeps every
// report the agent sends, by request id. A report that does not decode
// fails the test.
type Commander struct {
	t     testing.TB
	c     *mqttc.Client
	agent string

	mu      sync.Mutex
	reports map[string][]wire.Report // by request id
}

// ConnectWithin bounds Connect.
const ConnectWithin = 30 * time.Second

// Connect connects an MQTT client with o within ConnectWithin, failing the
// test if it cannot, and closes the client when the test ends.
func Connect(t testing.TB, o mqttc.Options) *mqttc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ConnectWithin)
	defer cancel()
	c, err := mqttc.Connect(ctx, o)
	if err != nil {
		t.Fatalf("connect to %s as %q: %v", o.BrokerURL, o.ClientID, err)
	}
	t.Cleanup(c.Close)
	return c
}

// AwaitWithin bounds Inbox.Await.
const AwaitWithin = 10 * time.Second

// Inbox records the messages a subscription delivers without blocking its
// handler: pass Handle to Subscribe. The zero value is ready for use.
type Inbox struct {
	mu   sync.Mutex // guards msgs
	msgs []mqttc.Message
}

// Handle records m.
func (b *Inbox) Handle(m mqttc.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
}

// All returns the messages so far, in the order they came.
func (b *Inbox) All() []mqttc.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]mqttc.Message(nil), b.msgs...)
}

// Find returns the first message for which match is true.
func (b *Inbox) Find(match func(mqttc.Message) bool) (mqttc.Message, bool) {
	for _, m := range b.All() {
		if match(m) {
			return m, true
		}
	}
	return mqttc.Message{}, false
}

// Has reports whether payload arrived, on topic unless topic is empty.
func (b *Inbox) Has(topic, payload string) bool {
	_, ok := b.Find(func(m mqttc.Message) bool { return (topic == "" || m.Topic == topic) && string(m.Payload) == payload })
	return ok
}

// Await waits up to AwaitWithin for a message with payload and returns it.
func (b *Inbox) Await(t testing.TB, payload string) mqttc.Message {
	t.Helper()
	var got mqttc.Message
	testenv.Eventually(t, AwaitWithin, func() bool {
		var ok bool
		got, ok = b.Find(func(m mqttc.Message) bool { return string(m.Payload) == payload })
		return ok
	}, fmt.Sprintf("message %q received", payload))
	return got
}

// NewCommander connects with o (BrokerURL and ClientID at least), subscribes
// to agentID's reports and closes the client when the test ends.
func NewCommander(t testing.TB, o mqttc.Options, agentID string) *Commander {
	t.Helper()
	c := Connect(t, o)
	k := &Commander{t: t, c: c, agent: agentID, reports: map[string][]wire.Report{}}
	if err := c.Subscribe(wire.ReportsTopic(agentID), 1, func(m mqttc.Message) {
		r, err := wire.DecodeReport(agentID, m.Payload)
		if err != nil {
			t.Errorf("agent sent a malformed report: %v: %s", err, m.Payload)
			return
		}
		k.mu.Lock()
		k.reports[r.RequestID()] = append(k.reports[r.RequestID()], r)
		k.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	return k
}

// Send publishes raw, as it is, on the agent's commands topic at QoS 1.
func (k *Commander) Send(raw string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := k.c.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic(k.agent), Payload: []byte(raw), QoS: 1}); err != nil {
		k.t.Fatal(err)
	}
}

// Await waits for the first report for request id and returns it.
func (k *Commander) Await(id string) wire.Report {
	k.t.Helper()
	return k.AwaitN(id, 1)[0]
}

// AwaitN waits until n reports for request id arrived and returns them all,
// in the order they came.
func (k *Commander) AwaitN(id string, n int) []wire.Report {
	k.t.Helper()
	var got []wire.Report
	testenv.Eventually(k.t, 10*time.Second, func() bool {
		got = k.Reports(id)
		return len(got) >= n
	}, fmt.Sprintf("%d reports for %s", n, id))
	return got
}

// Reports returns the reports for request id that came so far, in order.
func (k *Commander) Reports(id string) []wire.Report {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]wire.Report(nil), k.reports[id]...)
}

// Find returns a report, of any request id, for which match is true.
func (k *Commander) Find(match func(wire.Report) bool) (wire.Report, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, rs := range k.reports {
		for _, r := range rs {
			if match(r) {
				return r, true
			}
		}
	}
	return wire.Report{}, false
}

// Client is the connected MQTT client, for what a test needs beyond
// commands and reports (another subscription, a forged message).
func (k *Commander) Client() *mqttc.Client { return k.c }

// Ask sends raw and waits for the first report for request id.
func (k *Commander) Ask(id, raw string) wire.Report {
	k.t.Helper()
	k.Send(raw)
	return k.Await(id)
}
