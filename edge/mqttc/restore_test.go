package mqttc_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/testenv"
)

// gatingBroker is a mochi broker that refuses (SUBACK 0x80), or leaves
// unanswered, subscriptions to one filter while told to, and can drop
// every client at once.
type gatingBroker struct {
	mqtt.HookBase
	filter string
	deny   atomic.Bool   // refuse the filter
	hang   atomic.Bool   // never acknowledge a SUBSCRIBE to the filter
	hangs  chan struct{} // closed at cleanup, to end the hung SUBSCRIBEs
	subs   atomic.Int32  // SUBSCRIBE packets to the filter received
	server *mqtt.Server
}

func (h *gatingBroker) ID() string { return "gating" }
func (h *gatingBroker) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck || b == mqtt.OnSubscribe
}
func (h *gatingBroker) OnConnectAuthenticate(*mqtt.Client, packets.Packet) bool { return true }
func (h *gatingBroker) OnACLCheck(_ *mqtt.Client, topic string, write bool) bool {
	return write || topic != h.filter || !h.deny.Load()
}
func (h *gatingBroker) OnSubscribe(_ *mqtt.Client, pk packets.Packet) packets.Packet {
	for _, f := range pk.Filters {
		if f.Filter == h.filter {
			h.subs.Add(1)
			if h.hang.Load() {
				<-h.hangs
			}
		}
	}
	return pk
}

// dropAll ends every client's connection, as a broker restart would.
func (h *gatingBroker) dropAll() {
	for _, cl := range h.server.Clients.GetAll() {
		cl.Stop(errors.New("dropped by the test"))
	}
}

func startGatingBroker(t *testing.T, filter string) (*gatingBroker, string) {
	t.Helper()
	h := &gatingBroker{filter: filter, hangs: make(chan struct{})}
	h.server = mqtt.New(&mqtt.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := h.server.AddHook(h, nil); err != nil {
		t.Fatal(err)
	}
	l := listeners.NewTCP(listeners.Config{ID: "gating", Address: "127.0.0.1:0"})
	if err := h.server.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if err := h.server.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(h.hangs)
		_ = h.server.Close()
	})
	return h, "tcp://" + l.Address()
}

// TestUnrestoredSubscriptionDropsTheConnection: when the broker refuses a
// recorded subscription on a reconnect (an ACL mistake), or never
// acknowledges it (a broker under load), the client used to log it, look
// connected and run OnConnect, so an agent announced itself online and
// heard no command. It now drops that connection without running
// OnConnect, logs one line naming the filter and the likely cause, and
// reconnects with waits that double; once the broker grants the
// subscription again the client is back and OnConnect runs.
func TestUnrestoredSubscriptionDropsTheConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, hint string
		refuse     func(*gatingBroker, bool)
	}{
		{"refused", "ACL", func(h *gatingBroker, on bool) { h.deny.Store(on) }},
		{"unacknowledged", "overloaded", func(h *gatingBroker, on bool) { h.hang.Store(on) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const filter = "evoclaw/agents/a/commands"
			h, url := startGatingBroker(t, filter)
			var onConnect atomic.Int32
			var logs testenv.Buffer
			c := connect(t, url, func(o *mqttc.Options) {
				o.ConnectTimeout = 300 * time.Millisecond
				o.MaxReconnectInterval = 400 * time.Millisecond
				o.OnConnect = func(*mqttc.Client) { onConnect.Add(1) }
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			if err := c.Subscribe(filter, 1, func(mqttc.Message) {}); err != nil {
				t.Fatal(err)
			}
			before := onConnect.Load()
			tc.refuse(h, true)
			h.dropAll()
			// Subscribed once at first, then at least three reconnections.
			testenv.Eventually(t, waitFor, func() bool { return h.subs.Load() >= 4 || onConnect.Load() != before },
				"client reconnects and retries the subscription")
			if n := onConnect.Load(); n != before {
				t.Fatalf("OnConnect ran %d times on a connection without the subscription", n-before)
			}
			line := ""
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "not restored") {
					line = l
					break
				}
			}
			if !strings.Contains(line, filter) || !strings.Contains(line, tc.hint) {
				t.Fatalf("no line naming %s and %q; log:\n%s", filter, tc.hint, logs.String())
			}
			tc.refuse(h, false)
			testenv.Eventually(t, waitFor, func() bool { return onConnect.Load() > before }, "client back once the broker grants the subscription")
		})
	}
}
