package mqtttest

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// startTimeout bounds how long a broker may take to accept connections.
const startTimeout = 10 * time.Second

// Broker is one broker a contract test runs against.
type Broker struct {
	// Name identifies the implementation in subtest names: "embedded" or "mosquitto".
	Name string
	// URL is the broker's tcp://host:port.
	URL string
	// Stop takes the broker down; its clients see their connections drop.
	// mosquitto is killed with SIGKILL, the embedded broker closed. Stop does
	// nothing while stopped. Call it from the goroutine of the test that
	// started the broker: it reports failures through that test.
	Stop func()
	// Restart stops the broker if it is running and starts a fresh one, with
	// no retained messages or sessions, on the same address. Call it like Stop.
	Restart func()
}

// brokerKinds lists the implementations, in the order tests run them.
var brokerKinds = []string{"embedded", "mosquitto"}

// Brokers starts every broker implementation available: the embedded broker
// always, and mosquitto when it is installed. A missing mosquitto is logged
// loudly, or fails the test when EVOCLAW_REQUIRE_PEERS=1. Prefer
// ForEachBroker, which gives each subtest brokers of its own.
func Brokers(t testing.TB) []Broker {
	t.Helper()
	var out []Broker
	for _, kind := range brokerKinds {
		if b, ok := startKind(t, kind, t.Logf); ok {
			out = append(out, b)
		}
	}
	return out
}

// ForEachBroker runs f as a parallel subtest, named after the broker, against
// a fresh broker of every available implementation, started within the
// subtest so that Stop and Restart report to it. A missing mosquitto skips
// its subtest loudly, or fails it when EVOCLAW_REQUIRE_PEERS=1.
func ForEachBroker(t *testing.T, f func(t *testing.T, b Broker)) {
	t.Helper()
	for _, kind := range brokerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b, _ := startKind(t, kind, t.Skipf)
			f(t, b)
		})
	}
}

// startKind starts one broker implementation. When it is not installed it
// reports through skipOrLog (t.Skipf or t.Logf) and returns false.
func startKind(t testing.TB, kind string, skipOrLog func(string, ...any)) (Broker, bool) {
	t.Helper()
	switch kind {
	case "embedded":
		e := startEmbedded(t, "127.0.0.1:0")
		return Broker{Name: kind, URL: e.url, Stop: e.stop, Restart: e.restart}, true
	case "mosquitto":
		path, ok := testenv.Lookup("mosquitto")
		if !ok {
			testenv.Missing(t, skipOrLog, "mosquitto", "apt-get install mosquitto")
			return Broker{}, false
		}
		m := startMosquitto(t, path, AnonymousConf)
		return Broker{Name: kind, URL: mosquittoURL(m), Stop: m.Kill, Restart: m.Restart}, true
	}
	panic("mqtttest: unknown broker kind " + kind)
}

// StartEmbedded starts the embedded broker on a free loopback port and
// returns its URL. The broker is closed when the test ends.
func StartEmbedded(t testing.TB) string {
	t.Helper()
	return startEmbedded(t, "127.0.0.1:0").url
}

// embedded is a restartable embedded broker bound to one address.
type embedded struct {
	t    testing.TB
	addr string
	url  string
	b    *broker.Broker // nil while stopped; used only from the test goroutine
}

func startEmbedded(t testing.TB, listen string) *embedded {
	t.Helper()
	b, err := broker.Start(broker.Options{Listen: listen, AllowAnonymous: true})
	if err != nil {
		t.Fatalf("start embedded broker: %v", err)
	}
	e := &embedded{t: t, addr: b.Addr(), url: b.URL(), b: b}
	t.Cleanup(e.stop)
	return e
}

func (e *embedded) stop() {
	if e.b == nil {
		return
	}
	if err := e.b.Close(); err != nil {
		e.t.Errorf("close embedded broker: %v", err)
	}
	e.b = nil
}

func (e *embedded) restart() {
	e.t.Helper()
	e.stop()
	var err error
	testenv.Eventually(e.t, startTimeout, func() bool {
		e.b, err = broker.Start(broker.Options{Listen: e.addr, AllowAnonymous: true})
		return err == nil
	}, "restart embedded broker on "+e.addr)
}
