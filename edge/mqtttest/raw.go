package mqtttest

import (
	"io"
	"net"
	"testing"
	"time"
)

// RawConnect is an MQTT 3.1.1 CONNECT packet built by hand, for tests that
// need a connection no client library manages: one that never reconnects,
// never sends DISCONNECT, and dies exactly when the test closes it.
type RawConnect struct {
	// ClientID identifies the session; empty asks the broker to assign one.
	ClientID string
	// Username and Password are sent when non-empty.
	Username, Password string
	// WillTopic sets a QoS 1 last will when non-empty.
	WillTopic string
	// WillPayload is the will's body.
	WillPayload string
	// WillRetain makes the will retained.
	WillRetain bool
}

// Encode returns the CONNECT packet, with a 60 s keepalive and clean session.
func (c RawConnect) Encode() []byte {
	str := func(b []byte, s string) []byte { return append(append(b, byte(len(s)>>8), byte(len(s))), s...) }
	flags := byte(0x02) // clean session
	if c.WillTopic != "" {
		flags |= 0x04 | 0x08 // will flag, will QoS 1
		if c.WillRetain {
			flags |= 0x20
		}
	}
	if c.Username != "" {
		flags |= 0x80
	}
	if c.Password != "" {
		flags |= 0x40
	}
	body := str(nil, "MQTT")
	body = append(body, 4, flags, 0, 60)
	body = str(body, c.ClientID)
	if c.WillTopic != "" {
		body = str(str(body, c.WillTopic), c.WillPayload)
	}
	if c.Username != "" {
		body = str(body, c.Username)
	}
	if c.Password != "" {
		body = str(body, c.Password)
	}
	pkt := []byte{0x10}
	for n := len(body); ; { // remaining length, variable-length encoded
		b := byte(n % 128)
		n /= 128
		if n > 0 {
			b |= 0x80
		}
		pkt = append(pkt, b)
		if n == 0 {
			break
		}
	}
	return append(pkt, body...)
}

// DialRaw connects to addr (host:port), sends c and returns the open
// connection and the CONNACK return code (0 is accepted). The connection is
// closed when the test ends, if the test has not closed it before: closing it
// ends the session without DISCONNECT, so the broker publishes the will.
func DialRaw(t testing.TB, addr string, c RawConnect) (net.Conn, byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, startTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(startTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(c.Encode()); err != nil {
		t.Fatalf("write CONNECT to %s: %v", addr, err)
	}
	ack := make([]byte, 4)
	if _, err := io.ReadFull(conn, ack); err != nil {
		t.Fatalf("read CONNACK from %s: %v", addr, err)
	}
	if ack[0] != 0x20 || ack[1] != 2 {
		t.Fatalf("CONNACK from %s = % x, want 20 02 ..", addr, ack)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	return conn, ack[3]
}
