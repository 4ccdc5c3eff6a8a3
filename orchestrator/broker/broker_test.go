package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

func start(t *testing.T, o broker.Options) *broker.Broker {
	t.Helper()
	b, err := broker.Start(o)
	if err != nil {
		t.Fatalf("Start(%+v): %v", o, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func TestStartRefusesAnonymousOffLoopback(t *testing.T) {
	t.Parallel()
	users := []broker.User{{Name: "orchestrator", Role: broker.RoleOrchestrator, Password: "s3cret"}}
	anon := func(listen, tlsListen string) broker.Options {
		o := broker.Options{Listen: listen, AllowAnonymous: true}
		if tlsListen != "" {
			o.TLS = broker.TLSOptions{Listen: tlsListen, CertFile: "unused.pem", KeyFile: "unused.key"}
		}
		return o
	}
	tests := []struct {
		name    string
		opts    broker.Options
		refused string // the listen address named in the refusal; empty: allowed
	}{
		{"all IPv4 interfaces", anon("0.0.0.0:0", ""), "0.0.0.0:0"},
		{"empty host", anon(":0", ""), ":0"},
		{"all IPv6 interfaces", anon("[::]:0", ""), "[::]:0"},
		{"host name", anon("example.invalid:0", ""), "example.invalid:0"},
		{"tls listener on all interfaces", anon("127.0.0.1:0", "0.0.0.0:0"), "0.0.0.0:0"},
		{"IPv4 loopback", anon("127.0.0.1:0", ""), ""},
		{"other 127/8 address", anon("127.0.0.2:0", ""), ""},
		{"localhost", anon("localhost:0", ""), ""},
		{"IPv6 loopback", anon("[::1]:0", ""), ""},
		{"users on all interfaces", broker.Options{Listen: "0.0.0.0:0", Users: users}, ""},
		{"no identities and no anonymous on all interfaces", broker.Options{Listen: "0.0.0.0:0"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := broker.Start(tt.opts)
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("Start(%q) = %v, want success", tt.opts.Listen, err)
				}
				if err := b.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				return
			}
			if err == nil {
				_ = b.Close()
				t.Fatalf("Start(%q) succeeded, want ErrExposedAnonymous", tt.opts.Listen)
			}
			if !errors.Is(err, broker.ErrExposedAnonymous) {
				t.Fatalf("Start(%q) = %v, want ErrExposedAnonymous", tt.opts.Listen, err)
			}
			for _, want := range []string{"refusing to allow anonymous clients on " + tt.refused, "evoclaw agents add"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestStartValidatesOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts broker.Options
	}{
		{"no port", broker.Options{Listen: "127.0.0.1"}},
		{"port out of range", broker.Options{Listen: "127.0.0.1:70000"}},
		{"named port", broker.Options{Listen: "127.0.0.1:mqtt"}},
		{"empty user name", broker.Options{Users: []broker.User{{Name: "", Role: broker.RoleAgent, Password: "pw"}}}},
		{"user without role", broker.Options{Users: []broker.User{{Name: "a", Password: "pw"}}}},
		{"user without password", broker.Options{Users: []broker.User{{Name: "a", Role: broker.RoleAgent}}}},
		{"agent name not an agent id", broker.Options{Users: []broker.User{{Name: "a/b", Role: broker.RoleAgent, Password: "pw"}}}},
		{"user twice", broker.Options{Users: []broker.User{{Name: "a", Role: broker.RoleAgent, Password: "pw"}, {Name: "a", Role: broker.RoleAgent, Password: "pw"}}}},
		{"tls without certificate", broker.Options{TLS: broker.TLSOptions{Listen: "127.0.0.1:0"}}},
		{"tls files without listener", broker.Options{TLS: broker.TLSOptions{CertFile: "c.pem", KeyFile: "k.pem"}}},
		{"client cert required without CA", broker.Options{TLS: broker.TLSOptions{Listen: "127.0.0.1:0", CertFile: "c", KeyFile: "k", RequireClientCert: true}}},
		{"negative packet size", broker.Options{Listen: "127.0.0.1:0", MaxPacketBytes: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := broker.Start(tt.opts)
			if err == nil {
				_ = b.Close()
				t.Fatalf("Start(%+v) succeeded, want ErrInvalidOptions", tt.opts)
			}
			if !errors.Is(err, broker.ErrInvalidOptions) {
				t.Fatalf("Start(%+v) = %v, want ErrInvalidOptions", tt.opts, err)
			}
		})
	}
}

func TestStartReportsBusyPort(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if _, err := broker.Start(broker.Options{Listen: b.Addr(), AllowAnonymous: true}); err == nil || !strings.Contains(err.Error(), "listen on "+b.Addr()) {
		t.Fatalf("second Start on %s = %v, want a listen error naming the address", b.Addr(), err)
	}
}

func TestAddrAndURL(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr() = %q, want 127.0.0.1 with the real port", b.Addr())
	}
	if want := "tcp://" + b.Addr(); b.URL() != want {
		t.Fatalf("URL() = %q, want %q", b.URL(), want)
	}
	_, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "probe"})
	if rc != 0 {
		t.Fatalf("anonymous CONNECT on loopback without users: return code %d, want 0", rc)
	}
}

func TestCloseIsIdempotentAndDropsClients(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	c := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "closer", MaxReconnectInterval: 50 * time.Millisecond})
	// A connection that never sends CONNECT must not hold Close up.
	silent, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()

	if err := silent.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// EOF if it had been accepted, a reset if it was still in the backlog.
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read on silent connection after Close = %v, want it closed", err)
	}
	if conn, err := net.Dial("tcp", b.Addr()); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Close", b.Addr())
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return !c.Connected() }, "client notices the broker closed")
}

// TestCloseLeavesNoGoroutines runs alone (no t.Parallel) so that the count
// is not disturbed by other tests.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	conn, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "leak-check"})
	if rc != 0 {
		t.Fatalf("CONNECT return code %d", rc)
	}
	silent, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if n := runtime.NumGoroutine(); n <= before {
		t.Fatalf("%d goroutines with a broker and two connections, %d before: the check cannot see a leak", n, before)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	silent.Close()
	testenv.Eventually(t, 5*time.Second, func() bool { return runtime.NumGoroutine() <= before },
		"goroutines return to their count before Start")
}

func TestMaxPacketBytes(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true, MaxPacketBytes: 1024})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := mqttc.Options{BrokerURL: b.URL(), MaxReconnectInterval: 50 * time.Millisecond}
	opts.ClientID = "big-sub"
	sub := mqtttest.Connect(t, opts)
	got := make(chan int, 16)
	if err := sub.Subscribe("size/test", 1, func(m mqttc.Message) { got <- len(m.Payload) }); err != nil {
		t.Fatal(err)
	}
	opts.ClientID = "big-pub"
	pub := mqtttest.Connect(t, opts)

	// QoS 0 so that paho does not resend it after the broker drops us.
	_ = pub.Publish(ctx, mqttc.Message{Topic: "size/test", Payload: make([]byte, 2048)})
	testenv.Eventually(t, 5*time.Second, func() bool {
		return pub.Publish(ctx, mqttc.Message{Topic: "size/test", Payload: []byte("small"), QoS: 1}) == nil
	}, "small publish succeeds after the oversized one")
	select {
	case n := <-got:
		if n != len("small") {
			t.Fatalf("subscriber got a %d-byte message first; the oversized one was not refused", n)
		}
	case <-ctx.Done():
		t.Fatal("small message not received")
	}
}

// TestCloseWhileClientsLeave closes the broker while clients disconnect.
// mochi's own client sweep on Close (Clients.GetByListener) takes a read
// lock recursively and deadlocks when a departing client waits for the write
// lock in between; the broker must not use it.
func TestCloseWhileClientsLeave(t *testing.T) {
	t.Parallel()
	for round := range 300 {
		b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
		if err != nil {
			t.Fatal(err)
		}
		conns := make([]net.Conn, 20)
		for i := range conns {
			conns[i], _ = mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: fmt.Sprintf("leaver-%d", i)})
		}
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() { _ = c.Close() })
		}
		closed := make(chan error, 1)
		go func() { closed <- b.Close() }()
		wg.Wait()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close still blocked after 10s", round)
		}
	}
}
