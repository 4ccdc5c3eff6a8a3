package broker_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// atOnce is how soon a refused connection must be closed: well under the
// 10 s the broker gives a connection to send its CONNECT, which is when a
// connection the broker kept reading would end.
const atOnce = 3 * time.Second

func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	return dialFrom(t, "", addr)
}

// TestFirstPacketCheckedBeforeMochiReadsIt: a first packet that is not a
// CONNECT, or a CONNECT announcing more than MaxConnectBytes, is refused
// from its fixed header: the connection is closed at once and its body
// never read (mochi would allocate the announced size and wait for it).
// Over TLS the check happens after the handshake, on the plaintext.
func TestFirstPacketCheckedBeforeMochiReadsIt(t *testing.T) {
	t.Parallel()
	pki := mqtttest.NewPKI(t, "fleet")
	cert, key := pki.Issue(t, "broker", true)
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, Logger: logs.Logger(slog.LevelDebug),
		TLS: broker.TLSOptions{Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key}})
	pem, err := os.ReadFile(pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	dials := map[string]func() net.Conn{
		"tcp": func() net.Conn { return dialTCP(t, b.Addr()) },
		"tls": func() net.Conn {
			c, err := tls.Dial("tcp", b.TLSAddr(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
	}
	refused := []struct {
		name, log string
		first     []byte
	}{
		// Half of a 1 MiB CONNECT: the probe that took a node from 64 MB to
		// 517 MB with 500 connections.
		{"CONNECT of 1 MiB", "CONNECT packet over the size limit", append(mqtttest.RawHeader(0x10, 1<<20-8), make([]byte, 4096)...)},
		{"CONNECT one byte over", "CONNECT packet over the size limit", mqtttest.RawHeader(0x10, broker.MaxConnectBytes+1)},
		{"PUBLISH first", "first packet is not CONNECT", mqtttest.RawHeader(0x30, 1000)},
		{"remaining length of five bytes", "malformed remaining length", []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0x01}},
	}
	for kind, dial := range dials {
		for _, tt := range refused {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				c := dial()
				// A write that fails found the connection closed already.
				if _, err := c.Write(tt.first); err == nil && !mqtttest.RawClosed(c, atOnce) {
					t.Fatalf("connection still open %v after %q, want it closed at once", atOnce, tt.first[:min(len(tt.first), 6)])
				}
				wantLog(t, &logs, "mqtt connection refused before CONNECT", tt.log)
			})
		}
	}
	t.Run("a CONNECT under the bound is read", func(t *testing.T) {
		// A long (wrong) password: mochi reads it, the broker answers.
		pw := string(make([]byte, broker.MaxConnectBytes/2))
		if _, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-bob", Username: "bob", Password: pw}); rc != 5 {
			t.Fatalf("CONNACK %d, want 5 (bad password)", rc)
		}
	})
}

// TestPendingConnectsCapped: connections that have not logged in are
// bounded (Options.MaxPendingConnects); more are closed at once. Logged-in
// clients do not count, and once the silent ones go, clients connect again.
func TestPendingConnectsCapped(t *testing.T) {
	t.Parallel()
	const pending = 4
	var logs testenv.Buffer
	// Every connection here comes from 127.0.0.1: the per-address bound
	// is set above the cap, which is what this test is about.
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, MaxPendingConnects: pending, MaxPendingPerAddress: pending + 1,
		Logger: logs.Logger(slog.LevelDebug)})

	// More logged-in clients than the cap: each gave its slot back.
	for i := range 2 * pending {
		mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: fmt.Sprintf("ops-%d", i), Username: "ops", Password: "ops-pw"})
	}

	// Connections that never finish their CONNECT fill the slots; the
	// accept loop takes them in order, so the probes after them find no slot.
	var silent []net.Conn
	for i := range pending {
		c := dialTCP(t, b.Addr())
		if i%2 == 1 {
			if _, err := c.Write(mqtttest.RawHeader(0x10, broker.MaxConnectBytes)); err != nil {
				t.Fatal(err)
			}
		}
		silent = append(silent, c)
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		c := dialTCP(t, b.Addr())
		defer c.Close()
		return mqtttest.RawClosed(c, 500*time.Millisecond)
	}, "a connection over the cap closed at once")
	wantLog(t, &logs, "too many connections have not logged in yet", fmt.Sprintf("limit=%d", pending))

	for _, c := range silent {
		_ = c.Close()
	}
	// paho, as the node and agents use it.
	mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "alex-pw",
		MaxReconnectInterval: 100 * time.Millisecond})
}

// dialFrom connects to addr from the loopback address local (Linux routes
// all of 127.0.0.0/8 to lo), or from any address when local is "".
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestPendingConnectsCappedPerAddress: one address cannot hold more than
// MaxPendingPerAddress of the connections that have not logged in, so
// other hosts still get slots and log in; its slots come back when its
// connections end.
func TestPendingConnectsCappedPerAddress(t *testing.T) {
	t.Parallel()
	const perAddr = 2
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, MaxPendingConnects: 8, MaxPendingPerAddress: perAddr,
		Logger: logs.Logger(slog.LevelDebug)})

	var silent []net.Conn
	for range perAddr {
		silent = append(silent, dialFrom(t, "127.0.0.2", b.Addr()))
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		c := dialFrom(t, "127.0.0.2", b.Addr())
		defer c.Close()
		return mqtttest.RawClosed(c, 500*time.Millisecond)
	}, "a third connection from 127.0.0.2 closed at once")
	wantLog(t, &logs, "too many connections from this address have not logged in yet", fmt.Sprintf("limit=%d", perAddr), "127.0.0.2")

	// Another host is still served: its silent connection is held, and a
	// client logs in.
	if other := dialFrom(t, "127.0.0.3", b.Addr()); mqtttest.RawClosed(other, 300*time.Millisecond) {
		t.Fatal("a connection from 127.0.0.3 was closed while 127.0.0.2 held its share")
	}
	mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "ops-1", Username: "ops", Password: "ops-pw"})

	// 127.0.0.2's slots come back when its connections end.
	for _, c := range silent {
		_ = c.Close()
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		c := dialFrom(t, "127.0.0.2", b.Addr())
		defer c.Close()
		return !mqtttest.RawClosed(c, 300*time.Millisecond)
	}, "127.0.0.2 served again once its connections ended")
}
