package mqtttest

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

func TestStartEmbedded(t *testing.T) {
	t.Parallel()
	url := StartEmbedded(t)
	if !strings.HasPrefix(url, "tcp://127.0.0.1:") {
		t.Fatalf("StartEmbedded() = %q, want tcp://127.0.0.1:port", url)
	}
	assertAccepts(t, url, true)
}

// TestBrokersStopRestart checks that Stop and Restart keep each broker on
// its address, which the reconnect contract tests rely on.
func TestBrokersStopRestart(t *testing.T) {
	t.Parallel()
	bs := Brokers(t)
	if bs[0].Name != "embedded" {
		t.Fatalf("first broker is %q, want embedded", bs[0].Name)
	}
	if _, ok := testenv.Lookup("mosquitto"); ok && (len(bs) != 2 || bs[1].Name != "mosquitto") {
		t.Fatalf("mosquitto installed but Brokers returned %+v", bs)
	}
	for _, b := range bs {
		assertAccepts(t, b.URL, true)
		b.Stop()
		assertAccepts(t, b.URL, false)
		b.Stop() // a second Stop does nothing
		b.Restart()
		assertAccepts(t, b.URL, true)
		b.Restart() // restarting a running broker replaces it
		assertAccepts(t, b.URL, true)
	}
}

func TestForEachBroker(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // guards ran
	var ran []string
	t.Run("each", func(t *testing.T) {
		ForEachBroker(t, func(t *testing.T, b Broker) {
			if !strings.HasSuffix(t.Name(), "/"+b.Name) {
				t.Errorf("subtest %s runs broker %s", t.Name(), b.Name)
			}
			assertAccepts(t, b.URL, true)
			mu.Lock()
			ran = append(ran, b.Name)
			mu.Unlock()
		})
	})
	want := 1
	if _, ok := testenv.Lookup("mosquitto"); ok {
		want = 2
	}
	if len(ran) != want {
		t.Fatalf("ForEachBroker ran %v, want %d brokers", ran, want)
	}
}

func TestStartMosquitto(t *testing.T) {
	t.Parallel()
	url, stop, restart := StartMosquitto(t)
	assertAccepts(t, url, true)
	stop()
	assertAccepts(t, url, false)
	restart()
	assertAccepts(t, url, true)
}

func assertAccepts(t *testing.T, url string, want bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "tcp://"), time.Second)
	if err == nil {
		conn.Close()
	}
	if got := err == nil; got != want {
		t.Fatalf("%s accepts connections: %v, want %v (%v)", url, got, want, err)
	}
}

func TestDialRaw(t *testing.T) {
	t.Parallel()
	addr := strings.TrimPrefix(StartEmbedded(t), "tcp://")
	// A will over 127 bytes needs a two-byte remaining length.
	c := RawConnect{ClientID: "raw", WillTopic: "a/b", WillPayload: strings.Repeat("x", 300), WillRetain: true}
	if n := len(c.Encode()); n < 300 || c.Encode()[1]&0x80 == 0 {
		t.Fatalf("Encode() = %d bytes, remaining length % x: want a multi-byte length", n, c.Encode()[1:3])
	}
	conn, rc := DialRaw(t, addr, c)
	if rc != 0 {
		t.Fatalf("CONNACK return code %d, want 0", rc)
	}
	conn.Close()
}
