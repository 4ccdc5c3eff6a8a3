package mqtttest

import (
	"errors"
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
	// V5 speaks MQTT 5 instead of 3.1.1 (empty property lists).
	V5 bool
	// Persistent asks for a session the broker keeps after the connection
	// ends (clean session off).
	Persistent bool
}

// Encode returns the CONNECT packet, with a 60 s keepalive and clean
// session unless Persistent.
func (c RawConnect) Encode() []byte {
	flags := byte(0x02) // clean session
	if c.Persistent {
		flags = 0
	}
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
	body := rawString(nil, "MQTT")
	if c.V5 {
		body = append(body, 5, flags, 0, 60, 0) // no properties
	} else {
		body = append(body, 4, flags, 0, 60)
	}
	body = rawString(body, c.ClientID)
	if c.WillTopic != "" {
		if c.V5 {
			body = append(body, 0) // no will properties
		}
		body = rawString(rawString(body, c.WillTopic), c.WillPayload)
	}
	if c.Username != "" {
		body = rawString(body, c.Username)
	}
	if c.Password != "" {
		body = rawString(body, c.Password)
	}
	return rawPacket(0x10, body)
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
	typ, ack, err := readPacket(conn)
	if err != nil {
		t.Fatalf("read CONNACK from %s: %v", addr, err)
	}
	if typ != 0x20 || len(ack) < 2 || !c.V5 && len(ack) != 2 {
		t.Fatalf("CONNACK from %s = %x % x, want 20 with 2 bytes (3.1.1) or more (5)", addr, typ, ack)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	return conn, ack[1]
}

// rawPacket frames an MQTT control packet: type byte, variable-length
// remaining length, body.
func rawPacket(typ byte, body []byte) []byte {
	return append(RawHeader(typ, len(body)), body...)
}

// RawHeader is a packet's fixed header: its type byte and n, the length
// of what follows, as MQTT's variable-length integer. Sent alone, it
// announces a body that may never come.
func RawHeader(typ byte, n int) []byte {
	out := []byte{typ}
	for {
		b := byte(n % 128)
		n /= 128
		if n > 0 {
			b |= 0x80
		}
		out = append(out, b)
		if n == 0 {
			return out
		}
	}
}

func rawString(b []byte, s string) []byte {
	return append(append(b, byte(len(s)>>8), byte(len(s))), s...)
}

// RawPublish writes a QoS 0 PUBLISH of payload on topic to conn (from
// DialRaw). QoS 0 gets no answer, so whether the broker accepted it shows
// only in whether subscribers receive it, or in the broker closing conn.
func RawPublish(t testing.TB, conn net.Conn, topic, payload string, retain bool) {
	t.Helper()
	typ := byte(0x30)
	if retain {
		typ |= 0x01
	}
	if _, err := conn.Write(rawPacket(typ, append(rawString(nil, topic), payload...))); err != nil {
		t.Fatalf("write PUBLISH to %s: %v", topic, err)
	}
}

// RawPublishQoS1 writes a QoS 1 PUBLISH of payload on topic to conn (from
// DialRaw), with packet id 1; v5 adds the empty property list MQTT 5 wants.
// Read the answer with RawAnswer.
func RawPublishQoS1(t testing.TB, conn net.Conn, topic string, payload []byte, v5 bool) {
	t.Helper()
	body := append(rawString(nil, topic), 0, 1)
	if v5 {
		body = append(body, 0)
	}
	if _, err := conn.Write(rawPacket(0x32, append(body, payload...))); err != nil {
		t.Fatalf("write PUBLISH to %s: %v", topic, err)
	}
}

// Answer is what the broker sent back to a packet (see RawAnswer).
type Answer struct {
	// Type is the first byte of the first packet that came back (0x40
	// PUBACK, 0xe0 DISCONNECT), 0 when none did.
	Type byte
	// Reason is its reason code (MQTT 5), 0 when it has none.
	Reason byte
	// Closed is true when the broker closed the connection.
	Closed bool
}

// RawAnswer waits up to timeout for conn's next packet and then for the
// connection to close (which RawClosed-style waiting cannot tell from
// silence any faster). It reports the packet, if any, and whether the broker
// closed the connection.
func RawAnswer(conn net.Conn, timeout time.Duration) Answer {
	var a Answer
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return Answer{Closed: true}
	}
	typ, body, err := readPacket(conn)
	if err == nil {
		a.Type = typ
		switch {
		case typ>>4 == 4 && len(body) >= 3: // PUBACK with a reason code
			a.Reason = body[2]
		case typ>>4 == 14 && len(body) >= 1: // DISCONNECT with a reason code
			a.Reason = body[0]
		}
	} else {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			a.Closed = true
			return a
		}
	}
	a.Closed = RawClosed(conn, timeout)
	return a
}

// RawSubscribe sends one SUBSCRIBE for filter at QoS 1 on conn (from
// DialRaw) and returns the SUBACK return code: 0 to 2 is the granted QoS,
// 0x80 a refusal. It fails the test if no SUBACK arrives within 10 s, or
// if the broker closes the connection instead.
func RawSubscribe(t testing.TB, conn net.Conn, filter string) byte {
	t.Helper()
	const packetID = 7
	body := append([]byte{0, packetID}, rawString(nil, filter)...)
	if _, err := conn.Write(rawPacket(0x82, append(body, 1))); err != nil {
		t.Fatalf("write SUBSCRIBE %s: %v", filter, err)
	}
	// Skip anything else the broker sends first: a PUBLISH from an earlier
	// subscription may come before this SUBACK.
	_, ack := readUntil(t, conn, startTimeout, "SUBACK for "+filter, func(typ byte, body []byte) bool {
		return typ == 0x90 && len(body) == 3 && body[1] == packetID
	})
	return ack[2]
}

// RawClosed reports whether the broker has closed conn, waiting up to
// timeout for it to do so; data the broker sends meanwhile is discarded.
func RawClosed(conn net.Conn, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 512)
	for {
		if err := conn.SetReadDeadline(deadline); err != nil {
			return true
		}
		_, err := conn.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			_ = conn.SetReadDeadline(time.Time{})
			return false
		}
		return true
	}
}

// RawNextPublish reads packets from conn (from DialRaw) until a PUBLISH
// arrives and returns its topic and payload; other packets are skipped. It
// fails the test if none arrives within timeout. QoS 1 deliveries are not
// acknowledged.
func RawNextPublish(t testing.TB, conn net.Conn, timeout time.Duration) (topic, payload string) {
	t.Helper()
	typ, body := readUntil(t, conn, timeout, "PUBLISH", func(typ byte, body []byte) bool { return typ>>4 == 3 && len(body) >= 2 })
	n := int(body[0])<<8 | int(body[1])
	if len(body) < 2+n {
		t.Fatalf("malformed PUBLISH % x", body)
	}
	topic, rest := string(body[2:2+n]), body[2+n:]
	if (typ>>1)&3 > 0 && len(rest) >= 2 {
		rest = rest[2:] // packet id
	}
	return topic, string(rest)
}

// readUntil reads packets from conn, skipping those match refuses, and
// returns the first it takes; it fails the test, naming what it waited for,
// when none comes within timeout or the connection fails.
func readUntil(t testing.TB, conn net.Conn, timeout time.Duration, what string, match func(typ byte, body []byte) bool) (byte, []byte) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.SetReadDeadline(time.Time{}) }()
	for {
		typ, body, err := readPacket(conn)
		if err != nil {
			t.Fatalf("read %s: %v", what, err)
		}
		if match(typ, body) {
			return typ, body
		}
	}
}

// RawReadPacket reads one MQTT control packet from conn: its first byte
// and its body (for a test that plays the broker).
func RawReadPacket(conn net.Conn) (byte, []byte, error) { return readPacket(conn) }

// readPacket reads one MQTT control packet: its first byte and its body.
func readPacket(conn net.Conn) (byte, []byte, error) {
	hdr := make([]byte, 1)
	if _, err := io.ReadFull(conn, hdr); err != nil {
		return 0, nil, err
	}
	n, shift := 0, 0
	for {
		b := make([]byte, 1)
		if _, err := io.ReadFull(conn, b); err != nil {
			return 0, nil, err
		}
		n |= int(b[0]&0x7f) << shift
		if b[0]&0x80 == 0 {
			break
		}
		shift += 7
	}
	body := make([]byte, n)
	_, err := io.ReadFull(conn, body)
	return hdr[0], body, err
}
