package mqttc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/net/proxy"
)

// ErrPacketTooLarge means the broker sent a packet larger than
// Options.MaxPacketBytes; the connection is closed before the packet is
// read, and the client reconnects.
var ErrPacketTooLarge = errors.New("mqtt packet from broker too large")

// errMalformedLength means a packet's remaining length took more than the
// four bytes MQTT allows.
var errMalformedLength = errors.New("malformed mqtt remaining length")

// Why a bound on what the broker sends: paho allocates a packet whole, as
// its header announces it (up to 256 MiB), before reading it. A broker
// without ACLs lets anyone publish on an agent's commands topic, and a
// single 100 MB publish took an agent from 5 to 201 MB of private memory,
// enough to end a Pi Zero. The bound acts on the bytes as they arrive, in
// the connection paho reads from, so an oversized packet is refused once
// its length is known and before paho allocates anything for it.

// open dials the broker of uri (TCP, through a SOCKS proxy named by the
// environment as paho does, then TLS for tls:// and ssl://) and bounds
// what paho reads from it. It is paho's CustomOpenConnectionFn. A closed
// client dials nothing: Close ends the wait before a reconnect attempt
// (sleep), and paho makes the attempt all the same, after Close returned,
// and gives up only once it has failed (otherwise a login on the broker,
// which takes over any session holding the same client id).
func (c *Client) open(uri *url.URL, po paho.ClientOptions) (net.Conn, error) {
	select {
	case <-c.done:
		return nil, ErrClosed
	default:
	}
	d := &net.Dialer{Timeout: c.opts.ConnectTimeout}
	conn, err := proxy.FromEnvironmentUsing(d).Dial("tcp", uri.Host)
	if err != nil {
		return nil, err
	}
	if uri.Scheme == "tls" || uri.Scheme == "ssl" {
		tc := tls.Client(conn, po.TLSConfig)
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.ConnectTimeout)
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	lc := &limitedConn{Conn: conn, scan: packetScanner{max: c.opts.MaxPacketBytes}}
	c.mu.Lock()
	c.conn = lc
	c.mu.Unlock()
	return lc, nil
}

// limitedConn is a connection whose reads fail, and close it, once the
// bytes read announce a packet over the scanner's bound.
type limitedConn struct {
	net.Conn
	scan    packetScanner // only Read, on paho's one reading goroutine, uses it
	dropped atomic.Pointer[error]
}

// drop closes the connection and makes its reads fail with why. paho
// takes the error of a read from a connection closed under it for a
// Disconnect of its own and does not reconnect; why, a loss it reconnects
// after.
func (c *limitedConn) drop(why error) {
	c.dropped.CompareAndSwap(nil, &why)
	_ = c.Conn.Close()
}

// Read reads from the connection and checks the packet headers among the
// bytes read.
func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if why := c.dropped.Load(); why != nil {
		return 0, *why
	}
	if serr := c.scan.scan(p[:n]); serr != nil {
		c.Conn.Close()
		return 0, serr
	}
	return n, err
}

// packetScanner follows the MQTT packets in a byte stream: the fixed
// header of each (a type byte and a remaining length of one to four
// bytes), then the remaining length skipped. It starts at a packet's
// first byte. The zero value is a scanner without a bound.
type packetScanner struct {
	max int // largest remaining length allowed; zero: any

	inLength bool // in a remaining length
	length   int  // the remaining length read so far
	shift    uint // 7 × the length bytes read so far
	skip     int  // bytes of the current packet's body still to come
}

// scan takes the next bytes of the stream; it fails at the header of a
// packet over the bound, or with a remaining length MQTT does not allow.
func (s *packetScanner) scan(b []byte) error {
	for len(b) > 0 {
		switch {
		case s.skip > 0:
			n := min(s.skip, len(b))
			s.skip -= n
			b = b[n:]
		case !s.inLength: // a packet's type byte
			s.inLength, s.length, s.shift = true, 0, 0
			b = b[1:]
		default:
			x := b[0]
			b = b[1:]
			if s.shift == 21 && x&0x80 != 0 {
				return errMalformedLength
			}
			s.length |= int(x&0x7f) << s.shift
			s.shift += 7
			if x&0x80 != 0 {
				continue
			}
			s.inLength = false
			if s.max > 0 && s.length > s.max {
				return fmt.Errorf("%w: %d bytes announced, at most %d taken", ErrPacketTooLarge, s.length, s.max)
			}
			s.skip = s.length
		}
	}
	return nil
}
