package broker

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// connectPacketTimeout bounds how long a new connection may take to send its
// CONNECT packet. mochi sets no deadline until CONNECT has been read, so
// without this a silent peer would hold a goroutine forever.
const connectPacketTimeout = 10 * time.Second

// listener is a mochi listener over a net.Listener that, unlike mochi's own,
// owns every goroutine it starts: Close returns only after the accept loop and
// every connection handler have returned.
type listener struct {
	id  string
	nl  net.Listener
	log *slog.Logger // bounded and rate-limited: lines quote client input
	// pending bounds the connections that have not logged in, shared by
	// every listener of the broker; maxConnect is the largest CONNECT
	// (remaining length) let through to mochi.
	pending    *pendingGate
	maxConnect int

	// mu guards closed and conns; wg counts the accept loop and connection
	// handlers, and is only added to under mu while closed is false.
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

var _ listeners.Listener = (*listener)(nil)

func newListener(id string, nl net.Listener, log *slog.Logger, pending *pendingGate, maxConnect int) *listener {
	return &listener{id: id, nl: nl, log: log, pending: pending, maxConnect: maxConnect, conns: make(map[net.Conn]struct{})}
}

// ID returns the listener id used by mochi.
func (l *listener) ID() string { return l.id }

// Address returns the bound host:port.
func (l *listener) Address() string { return l.nl.Addr().String() }

// Protocol returns "tcp".
func (l *listener) Protocol() string { return "tcp" }

// Init is called by mochi when the listener is added; the socket is already bound.
func (l *listener) Init(*slog.Logger) error { return nil }

// Serve accepts connections until Close. mochi calls it on a goroutine of its
// own, which is why it registers itself with wg before doing anything.
func (l *listener) Serve(establish listeners.EstablishFn) {
	if !l.track(nil) {
		return
	}
	defer l.wg.Done()
	for {
		conn, err := l.nl.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				l.log.Error("mqtt broker stopped accepting", logKeyError, err)
			}
			return
		}
		key := addressKey(conn.RemoteAddr())
		if err := l.pending.enter(key); err != nil {
			// Closed at once rather than queued: waiting would hold the
			// socket anyway, and clients retry with backoff.
			limit := cap(l.pending.slots)
			if errors.Is(err, errAddressFull) {
				limit = l.pending.perAddr
			}
			l.log.Warn("mqtt connection refused: "+err.Error(),
				logKeyRemote, conn.RemoteAddr().String(), logKeyLimit, limit)
			_ = conn.Close()
			continue
		}
		if !l.track(conn) {
			l.pending.leave(key)
			_ = conn.Close()
			return
		}
		go l.handle(conn, key, establish)
	}
}

// handle runs mochi's session for one connection, once its first packet
// has shown a CONNECT header of an acceptable size.
func (l *listener) handle(conn net.Conn, key string, establish listeners.EstablishFn) {
	defer l.wg.Done()
	defer l.untrack(conn)
	pc := &pendingConn{Conn: conn, gate: l.pending, key: key}
	defer pc.release()
	// mochi replaces the deadline after CONNECT; until then it bounds the
	// TLS handshake, the header peeked here and the rest of the CONNECT.
	_ = conn.SetReadDeadline(time.Now().Add(connectPacketTimeout))
	hdr, err := readConnectHeader(conn, l.maxConnect)
	if err != nil {
		if errors.Is(err, errNotConnect) || errors.Is(err, errConnectTooLarge) || errors.Is(err, errBadLength) {
			l.log.Warn("mqtt connection refused before CONNECT", logKeyRemote, conn.RemoteAddr().String(), logKeyReason, err.Error())
		} else {
			// A peer that went away, a TLS handshake that failed, a
			// silent one past the deadline: nothing worth a warning.
			l.log.Debug("mqtt connection ended before CONNECT", logKeyRemote, conn.RemoteAddr().String(), logKeyError, err)
		}
		_ = conn.Close()
		return
	}
	pc.hdr = hdr
	if err := establish(l.id, pc); err != nil {
		// Lost connections, refused credentials and protocol errors all end
		// here; the auth hook has already logged refusals.
		l.log.Debug("mqtt client connection ended", logKeyRemote, conn.RemoteAddr().String(), logKeyError, err)
	}
	_ = conn.Close()
}

// track registers the accept loop (conn == nil) or a connection with wg. It
// reports false once Close has started.
func (l *listener) track(conn net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if conn != nil {
		l.conns[conn] = struct{}{}
	}
	l.wg.Add(1)
	return true
}

func (l *listener) untrack(conn net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, conn)
}

// Close stops accepting, closes every connection and waits for every
// goroutine the listener started. Closing a connection ends its mochi session
// as a lost connection would. mochi's own client sweep (the closeClients
// callback, Clients.GetByListener) is deliberately not used: it takes a read
// lock recursively and deadlocks when a client that is leaving at the same
// moment waits for the write lock in between. mochi guarantees a single call.
func (l *listener) Close(listeners.CloseFn) {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()

	_ = l.nl.Close()

	l.mu.Lock()
	for conn := range l.conns {
		_ = conn.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
