package mqttc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

func TestConnectValidatesOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts mqttc.Options
	}{
		{"no url", mqttc.Options{}},
		{"websocket url", mqttc.Options{BrokerURL: "ws://127.0.0.1:1883"}},
		{"no scheme", mqttc.Options{BrokerURL: "127.0.0.1:1883"}},
		{"tls config on plain tcp", mqttc.Options{BrokerURL: "tcp://127.0.0.1:1883", TLSConfig: &tls.Config{}}},
		{"keepalive under a second", mqttc.Options{BrokerURL: "tcp://127.0.0.1:1883", KeepAlive: 500 * time.Millisecond}},
		{"negative connect timeout", mqttc.Options{BrokerURL: "tcp://127.0.0.1:1883", ConnectTimeout: -time.Second}},
		{"will without topic", mqttc.Options{BrokerURL: "tcp://127.0.0.1:1883", Will: &mqttc.Message{Payload: []byte("x")}}},
		{"will on wildcard topic", mqttc.Options{BrokerURL: "tcp://127.0.0.1:1883", Will: &mqttc.Message{Topic: "a/+/status"}}},
		{"will qos 3", mqttc.Options{BrokerURL: "tcp://127.0.0.1:1883", Will: &mqttc.Message{Topic: "a", QoS: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := mqttc.Connect(context.Background(), tt.opts)
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded, want ErrInvalidOptions")
			}
			if !errors.Is(err, mqttc.ErrInvalidOptions) {
				t.Fatalf("Connect = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// logHook is a slog.Handler that hands every record to a function.
type logHook struct{ fn func(slog.Record) }

func (h logHook) Enabled(context.Context, slog.Level) bool      { return true }
func (h logHook) Handle(_ context.Context, r slog.Record) error { h.fn(r); return nil }
func (h logHook) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h logHook) WithGroup(string) slog.Handler                 { return h }

// refuser listens on a loopback port and hangs up on every connection, the
// way a port with no MQTT broker behind it fails a client, while keeping the
// port from being handed to anyone else. stop closes it and waits for it.
func refuser(t *testing.T) (addr string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = l.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return l.Addr().String(), stop
}

func TestConnectRetriesUntilBrokerStarts(t *testing.T) {
	t.Parallel()
	addr, stopRefusing := refuser(t)
	var failures atomic.Int32
	log := slog.New(logHook{func(r slog.Record) {
		if r.Message == "mqtt connection attempt failed" {
			failures.Add(1)
		}
	}})
	var (
		c    *mqttc.Client
		cerr error
	)
	done := make(chan struct{}) // closed when Connect has returned
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	go func() {
		defer close(done)
		c, cerr = mqttc.Connect(ctx, mqttc.Options{BrokerURL: "tcp://" + addr, MaxReconnectInterval: 50 * time.Millisecond, Logger: log})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if c != nil {
			c.Close()
		}
	})
	testenv.Eventually(t, waitFor, func() bool { return failures.Load() >= 2 }, "Connect retries while no broker answers")

	stopRefusing()
	b, err := broker.Start(broker.Options{Listen: addr, AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	<-done
	if cerr != nil {
		t.Fatalf("Connect after the broker started: %v", cerr)
	}
	if !c.Connected() {
		t.Fatal("Connected() = false after Connect succeeded")
	}
}

func TestConnectGivesUpWhenContextEnds(t *testing.T) {
	t.Parallel()
	addr, _ := refuser(t)
	url := "tcp://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: url, ConnectTimeout: time.Second})
	if err == nil {
		c.Close()
		t.Fatal("Connect to a port without a broker succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Connect = %v, want context.DeadlineExceeded", err)
	}
	for _, want := range []string{"connect to mqtt broker " + url + ": ", "last attempt: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Connect returned %v after it started; ctx allowed 300ms", d)
	}
}

func TestMisuseErrors(t *testing.T) {
	t.Parallel()
	c := connect(t, mqtttest.StartEmbedded(t), nil)
	ctx := context.Background()
	nop := func(mqttc.Message) {}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"publish to wildcard", c.Publish(ctx, mqttc.Message{Topic: "evoclaw/agents/+/commands"}), mqttc.ErrInvalidMessage},
		{"publish without topic", c.Publish(ctx, mqttc.Message{}), mqttc.ErrInvalidMessage},
		{"publish qos 3", c.Publish(ctx, mqttc.Message{Topic: "a", QoS: 3}), mqttc.ErrInvalidMessage},
		{"publish with done ctx", c.Publish(canceled, mqttc.Message{Topic: "a", QoS: 1}), context.Canceled},
		{"subscribe to misplaced #", c.Subscribe("a/#/b", 1, nop), mqttc.ErrInvalidMessage},
		{"subscribe to partial +", c.Subscribe("a/b+", 1, nop), mqttc.ErrInvalidMessage},
		{"subscribe with nil handler", c.Subscribe("a", 1, nil), mqttc.ErrInvalidMessage},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(c.Close)
	}
	wg.Wait()
	c.Close()
	if err := c.Publish(ctx, mqttc.Message{Topic: "a", QoS: 1}); !errors.Is(err, mqttc.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	if err := c.Subscribe("a", 1, nop); !errors.Is(err, mqttc.ErrClosed) {
		t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
	}
	if c.Connected() {
		t.Error("Connected() = true after Close")
	}
}

// TestContractSubscribeWhileDisconnected records a subscription while the
// broker is down and checks it takes effect once the client reconnects.
func TestContractSubscribeWhileDisconnected(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		var connects atomic.Int32
		sub := connect(t, b.URL, func(o *mqttc.Options) { o.OnConnect = func(*mqttc.Client) { connects.Add(1) } })
		b.Stop()
		testenv.Eventually(t, waitFor, func() bool { return !sub.Connected() }, "client notices the broker is gone")
		var got mqtttest.Inbox
		if err := sub.Subscribe("evoclaw/agents/+/reports", 1, got.Handle); err != nil {
			t.Fatalf("Subscribe while disconnected = %v, want it recorded", err)
		}
		b.Restart()
		testenv.Eventually(t, waitFor, func() bool { return connects.Load() >= 2 }, "client reconnects")
		pub := connect(t, b.URL, nil)
		publish(t, pub, mqttc.Message{Topic: "evoclaw/agents/alex-eye/reports", Payload: []byte("hello"), QoS: 1})
		got.Await(t, "hello")
	})
}

func TestTLS(t *testing.T) {
	t.Parallel()
	cert, pool := selfSigned(t)
	url := startTLSBroker(t, cert)

	// Each failed verification is retried (a board's clock may be set
	// later, a certificate replaced) and its line says what to change.
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	for _, tt := range []struct {
		name, url string
		tls       *tls.Config
		hint      string
	}{
		{"verifies against system roots by default", url, nil, "set ca_file"},
		{"expired or not yet valid", url, &tls.Config{RootCAs: pool, Time: later}, "check this device's clock"},
		{"host not in the certificate", strings.Replace(url, "127.0.0.1", "localhost", 1), &tls.Config{RootCAs: pool}, "does not name the host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs testenv.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: tt.url, ConnectTimeout: time.Second, TLSConfig: tt.tls, Logger: logs.Logger(slog.LevelInfo)})
				if err == nil {
					c.Close()
				}
				done <- err
			}()
			testenv.Eventually(t, waitFor, func() bool { return strings.Contains(logs.String(), "connection attempt failed") }, "a failed attempt logged")
			cancel()
			if err := <-done; err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("Connect = %v, want a certificate verification error", err)
			}
			if l := logs.String(); !strings.Contains(l, tt.hint) {
				t.Fatalf("log lacks the hint %q:\n%s", tt.hint, l)
			}
		})
	}
	t.Run("custom roots", func(t *testing.T) {
		t.Parallel()
		c := connect(t, url, func(o *mqttc.Options) { o.TLSConfig = &tls.Config{RootCAs: pool} })
		var got mqtttest.Inbox
		if err := c.Subscribe("tls/test", 1, got.Handle); err != nil {
			t.Fatal(err)
		}
		publish(t, c, mqttc.Message{Topic: "tls/test", Payload: []byte("over tls"), QoS: 1})
		got.Await(t, "over tls")
	})
}

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mqttc test broker"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// startTLSBroker runs a bare mochi broker with a TLS listener; our embedded
// broker has no TLS option, and TLS is the client's concern here.
func startTLSBroker(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	s := mqtt.New(&mqtt.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddHook(new(allowAll), nil); err != nil {
		t.Fatal(err)
	}
	l := listeners.NewTCP(listeners.Config{ID: "tls", Address: "127.0.0.1:0", TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err := s.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return "tls://" + l.Address()
}

// allowAll is a mochi hook that lets every client in; mochi denies all by
// default. (mochi's own auth.AllowHook pulls in a YAML dependency.)
type allowAll struct{ mqtt.HookBase }

func (h *allowAll) ID() string { return "allow-all" }
func (h *allowAll) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}
func (h *allowAll) OnConnectAuthenticate(*mqtt.Client, packets.Packet) bool { return true }
func (h *allowAll) OnACLCheck(*mqtt.Client, string, bool) bool              { return true }

func TestCloseWhileReconnecting(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := connect(t, b.URL(), func(o *mqttc.Options) { o.MaxReconnectInterval = 5 * time.Second })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, func() bool { return !c.Connected() }, "client notices the broker is gone")
	began := time.Now()
	c.Close()
	if d := time.Since(began); d > time.Second {
		t.Fatalf("Close while reconnecting took %v", d)
	}
}

// TestSubscribeRightAfterConnect: a subscription made as soon as Connect
// returns is sent once. paho runs the connection's handler, which restores
// the recorded subscriptions, on a goroutine of its own; Connect used to
// return before it ran, so the handler could find the new record and
// subscribe again, and the filter's retained message came twice.
func TestSubscribeRightAfterConnect(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		topic := "evoclaw/agents/" + clientID("agent") + "/status"
		publish(t, connect(t, b.URL, nil), mqttc.Message{Topic: topic, Payload: []byte("retained"), QoS: 1, Retained: true})
		const clients = 20
		inboxes := make([]mqtttest.Inbox, clients)
		var wg sync.WaitGroup
		for i := range inboxes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), waitFor)
				defer cancel()
				c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: b.URL, ClientID: clientID("sub")})
				if err != nil {
					t.Error(err)
					return
				}
				t.Cleanup(c.Close)
				if err := c.Subscribe(topic, 1, inboxes[i].Handle); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for i := range inboxes {
			inboxes[i].Await(t, "retained")
		}
		time.Sleep(200 * time.Millisecond) // for a second copy to arrive
		for i := range inboxes {
			if n := len(inboxes[i].All()); n != 1 {
				t.Errorf("client %d got the retained message %d times", i, n)
			}
		}
	})
}
