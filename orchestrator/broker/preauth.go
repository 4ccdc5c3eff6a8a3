package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// Bounds on what a client may cost the broker before it has logged in.
const (
	// MaxConnectBytes is the largest CONNECT packet accepted (remaining
	// length, 64 KiB), or Options.MaxPacketBytes if that is smaller. An
	// evoclaw client's CONNECT is a few hundred bytes (client id, a
	// username of at most 48 bytes, a password of 43, a last will of about
	// a hundred); 64 KiB leaves room for any sane client. mochi allocates a
	// packet whole before reading it, so without this bound every
	// connection could make it allocate Options.MaxPacketBytes before
	// anyone is authenticated.
	MaxConnectBytes = 64 << 10
	// DefaultMaxPendingConnects is how many connections may be between
	// accept and the end of their CONNECT's authentication at once, across
	// listeners (TLS handshake, CONNECT packet, password check): about
	// 50 MiB at most with mochi's per-client buffers.
	DefaultMaxPendingConnects = 256
	// DefaultMaxPendingPerAddress is how many of those one address may
	// hold (an IPv6 /64 counts as one address, as one host has them all),
	// so one host cannot take every slot and keep the fleet from logging
	// in. A host logs in one client or a few at once; a group of agents
	// behind one NAT that reconnects all at once retries past it with
	// backoff.
	DefaultMaxPendingPerAddress = 32
)

// Why a connection is closed before mochi sees it.
var (
	errNotConnect      = errors.New("first packet is not CONNECT")
	errConnectTooLarge = errors.New("CONNECT packet over the size limit")
	errBadLength       = errors.New("malformed remaining length")
)

// pendingGate counts the connections that have not completed CONNECT, in
// all and per address. The zero value admits none; build it with
// newPendingGate.
type pendingGate struct {
	slots   chan struct{}
	perAddr int
	mu      sync.Mutex     // guards byAddr
	byAddr  map[string]int // held slots by addressKey; no zero entries
}

func newPendingGate(n, perAddr int) *pendingGate {
	return &pendingGate{slots: make(chan struct{}, n), perAddr: perAddr, byAddr: map[string]int{}}
}

// addressKey is what the per-address bound counts by: the IP of addr, an
// IPv6 address cut to its /64; "" (not counted) for an address that is
// not an IP one.
func addressKey(addr net.Addr) string { return rate.AddressKey(addr.String()) }

// errAddressFull and errAllFull say why enter refused a connection.
var (
	errAllFull     = errors.New("too many connections have not logged in yet")
	errAddressFull = errors.New("too many connections from this address have not logged in yet")
)

// enter takes a slot for a connection from key, or says why not.
func (g *pendingGate) enter(key string) error {
	if key != "" {
		g.mu.Lock()
		if g.byAddr[key] >= g.perAddr {
			g.mu.Unlock()
			return errAddressFull
		}
		g.byAddr[key]++
		g.mu.Unlock()
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
		g.forget(key)
		return errAllFull
	}
}

// leave gives back a slot entered with key.
func (g *pendingGate) leave(key string) {
	<-g.slots
	g.forget(key)
}

func (g *pendingGate) forget(key string) {
	if key == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byAddr[key]--; g.byAddr[key] <= 0 {
		delete(g.byAddr, key)
	}
}

// pendingConn is a connection handed to mochi after its fixed header was
// read (readConnectHeader): Read returns those bytes first. It holds a slot
// of its gate until loggedIn or release.
type pendingConn struct {
	net.Conn
	hdr  []byte // read from Conn, not yet returned by Read; only mochi's reader goroutine reads
	gate *pendingGate
	key  string // the slot's addressKey
	once sync.Once
}

// Read returns the peeked header, then reads Conn.
func (c *pendingConn) Read(p []byte) (int, error) {
	if len(c.hdr) > 0 {
		n := copy(p, c.hdr)
		c.hdr = c.hdr[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// release gives the connection's slot back; later calls do nothing.
func (c *pendingConn) release() { c.once.Do(func() { c.gate.leave(c.key) }) }

// loggedIn releases the slot of cl's connection, whose CONNECT was just
// decided; a connection that did not come through a listener has none.
func loggedIn(conn net.Conn) {
	if pc, ok := conn.(*pendingConn); ok {
		pc.release()
	}
}

// tlsState returns the TLS state of a client's connection, and false when
// it is not over TLS.
func tlsState(conn net.Conn) (tls.ConnectionState, bool) {
	if pc, ok := conn.(*pendingConn); ok {
		conn = pc.Conn
	}
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return tls.ConnectionState{}, false
	}
	return tc.ConnectionState(), true
}

// readConnectHeader reads the fixed header of the first packet from r (for
// TLS, after the handshake): a CONNECT whose remaining length is at most
// limit. It reads nothing past the header, so a refused packet's body is
// never read, and returns the header's bytes.
func readConnectHeader(r io.Reader, limit int) ([]byte, error) {
	var b [5]byte // type, then a remaining length of 1 to 4 bytes
	if _, err := io.ReadFull(r, b[:1]); err != nil {
		return nil, err
	}
	if b[0] != 0x10 { // CONNECT, flags 0 [MQTT-3.1.1]
		return nil, fmt.Errorf("%w: first byte %#x", errNotConnect, b[0])
	}
	n, mult := 0, 1
	for i := 1; i < len(b); i++ {
		if _, err := io.ReadFull(r, b[i:i+1]); err != nil {
			return nil, err
		}
		n += int(b[i]&0x7f) * mult
		if b[i]&0x80 == 0 {
			if n > limit {
				return nil, fmt.Errorf("%w: %d bytes, at most %d", errConnectTooLarge, n, limit)
			}
			return b[:i+1], nil
		}
		mult *= 128
	}
	return nil, errBadLength
}
