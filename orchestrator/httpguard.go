package orchestrator

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// httpLimits bound what one client of the API can hold. Without them a
// client needed no token to keep a connection (and its goroutine and
// buffers) for ever: a request announcing a body it never sends held the
// connection while the server waited to discard the body after the 401,
// an idle kept-alive connection was never closed, and a client that
// stopped reading a stream held its handler in a write.
type httpLimits struct {
	// Conns is the most connections served at once. One more is served
	// by closing an idle kept-alive connection, or one that has spent
	// NewGrace on its first request's headers; with neither it waits
	// until one closes.
	Conns int
	// Idle closes a kept-alive connection that sends no next request.
	Idle time.Duration
	// Body bounds reading a request's body, from the handler's start to
	// the body's end (the request's headers have ReadHeaderTimeout).
	Body time.Duration
	// WriteStall ends a connection whose response made no progress for
	// this long: each write has this long to go out, so a long stream
	// whose client reads lives on, and one whose client stopped does not.
	WriteStall time.Duration
	// HeaderBytes bounds a request's line and headers
	// (http.Server.MaxHeaderBytes; Go reads 4 KiB more before it answers
	// 431). Go's default, 1 MiB, let 500 token-less connections that
	// never end their headers hold 500 MB.
	HeaderBytes int
	// Header bounds reading a request's line and headers
	// (http.Server.ReadHeaderTimeout).
	Header time.Duration
	// NewGrace: with every slot taken, a connection that has not sent its
	// first request's headers this long after it was accepted may be
	// closed to serve a new one (a client sends them at once).
	NewGrace time.Duration
	// BodyBytes bounds the bytes of bodies over 64 KiB that handlers
	// read and decode at once (bodyBudget); BodyWait is how long a body waits for
	// its share before it is refused 429.
	BodyBytes int
	BodyWait  time.Duration
	// AnswerBytes bounds the bytes of answers over 64 KiB to GET requests
	// (and audit queries) being sent at once (answerBudget).
	AnswerBytes int
	// PerAddress is the most of the Conns one client address may hold (an
	// IPv6 /64 counts as one address; loopback is not counted). One more
	// from an address at its bound is served by closing that address's
	// connection idle longest; with none idle it is answered 503 and
	// closed at once.
	PerAddress int
	// addrKey is what PerAddress counts by; nil: perAddressKey. Tests
	// count loopback addresses with it.
	addrKey func(net.Addr) string
}

// defaultHTTPLimits: 512 connections are about 10 MB of buffers and
// goroutines at most, and with 16 KiB of headers each (the token is 70
// bytes; browsers send a few KiB, Node.js refuses more than 16 KiB) at
// most 10 MB more; a minute lets a 4 MiB body through a slow link and a
// phone on a bad network catch up.
//
// 64 connections an address leave room for every browser tab, CLI and
// pooled client of one host (browsers open 6 a host), and keep one host
// that pipelines requests and never reads the answers (so each holds its
// slot in a write for WriteStall) to an eighth of the slots: 600 such
// connections from one address made every other client wait 0.4-5.8 s
// for a /healthz before.
//
// 32 MiB of bodies over 64 KiB at once are eight of the largest chat
// completions (4 MiB), about 130 MB of the node's memory while they are
// decoded; a body waits for its share at most 30 s, half of the minute
// it has to arrive.
//
// 32 MiB of answers over 64 KiB being sent at once are four of the largest
// page of a conversation's messages (500 messages of 16 KiB).
var defaultHTTPLimits = httpLimits{Conns: 512, Idle: 2 * time.Minute, Body: time.Minute, WriteStall: time.Minute,
	HeaderBytes: 16 << 10, Header: 10 * time.Second, NewGrace: 2 * time.Second, PerAddress: 64,
	BodyBytes: 32 << 20, BodyWait: 30 * time.Second, AnswerBytes: 32 << 20}

// unreadBodyLinger is how long the server may read a body it did not use,
// after the answer, before it closes the connection (Go waits as long
// after its own half-close for the same reason).
const unreadBodyLinger = 500 * time.Millisecond

// withDefaults fills the zero fields from defaultHTTPLimits.
func (l httpLimits) withDefaults() httpLimits {
	d := defaultHTTPLimits
	return httpLimits{Conns: orDefault(l.Conns, d.Conns), Idle: orDefault(l.Idle, d.Idle), Body: orDefault(l.Body, d.Body),
		WriteStall: orDefault(l.WriteStall, d.WriteStall), HeaderBytes: orDefault(l.HeaderBytes, d.HeaderBytes),
		Header: orDefault(l.Header, d.Header), NewGrace: orDefault(l.NewGrace, d.NewGrace),
		PerAddress: orDefault(l.PerAddress, d.PerAddress), BodyBytes: orDefault(l.BodyBytes, d.BodyBytes),
		BodyWait: orDefault(l.BodyWait, d.BodyWait), AnswerBytes: orDefault(l.AnswerBytes, d.AnswerBytes), addrKey: l.addrKey}
}

// perAddressKey is the address a connection from addr counts against:
// its IP, an IPv6 address cut to its /64; "" (not counted) for loopback,
// where a reverse proxy on the machine brings every client, and for an
// address that is not an IP one or none.
func perAddressKey(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Addr().Unmap().IsLoopback() {
		return ""
	}
	return rate.AddressKey(addr.String())
}

// orDefault is v when set (above zero), else d.
func orDefault[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// apply sets l's bounds on srv (its handler is guarded) and returns ln
// bounded to l.Conns, to serve srv on.
func (l httpLimits) apply(srv *http.Server, ln net.Listener) net.Listener {
	key := l.addrKey
	if key == nil {
		key = perAddressKey
	}
	cl := &connLimiter{Listener: ln, max: l.Conns, grace: l.NewGrace, perAddr: l.PerAddress, key: key,
		conns: map[*limitedConn]struct{}{}, byAddr: map[string]int{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	srv.Handler = l.guard(srv.Handler)
	srv.ReadHeaderTimeout = l.Header
	srv.IdleTimeout = l.Idle
	srv.MaxHeaderBytes = l.HeaderBytes
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		cl.connState(c, s)
		if prev != nil {
			prev(c, s)
		}
	}
	return cl
}

// connLimiter serves at most max connections at once. A connection past
// max is accepted and held until one closes; when one is idle (kept
// alive between requests, or still reading the first request's headers
// after grace), it is closed to make room at once. Without that, 512
// token-less connections that each asked for /healthz and then sat idle
// kept every other client out for as long as they asked again within
// the idle timeout. Closing an idle kept-alive connection is what
// IdleTimeout does anyway (RFC 9112 9.3: clients retry); a connection
// still on its first headers after grace is a slow or stuck client.
type connLimiter struct {
	net.Listener
	max     int
	grace   time.Duration
	perAddr int                   // of max, what one key may hold
	key     func(net.Addr) string // what perAddr counts by; "" is not counted

	mu     sync.Mutex
	conns  map[*limitedConn]struct{}
	byAddr map[string]int // held connections by key; no zero entries

	wake      chan struct{} // a slot freed or a connection went idle
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// limitedConn holds a slot until closed.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	key  string // what it counts against in l.byAddr; "" none
	once sync.Once
	// state and since (when it entered state) are guarded by l.mu.
	state http.ConnState
	since time.Time
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		if c.key != "" {
			if c.l.byAddr[c.key]--; c.l.byAddr[c.key] <= 0 {
				delete(c.l.byAddr, c.key)
			}
		}
		c.l.mu.Unlock()
		c.l.signal()
	})
	return err
}

// CloseWrite lets the server end its side first before it closes a
// connection with unread input (so the client reads the answer rather
// than a reset), as it does on a *net.TCPConn.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (l *connLimiter) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Accept returns the next connection once it has a slot. The server
// accepts on one goroutine, so at most one connection waits here. One
// from an address that holds its perAddr is refused at once unless one of
// that address's own connections is idle, so that no address makes the
// others wait here.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
		select {
		case <-l.done:
			return nil, net.ErrClosed
		default:
		}
	}
}

// admit returns c holding a slot, or nil when c was refused or the
// limiter closed.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	lc := &limitedConn{Conn: c, l: l, state: http.StateNew, key: l.key(c.RemoteAddr())}
	for {
		now := time.Now()
		l.mu.Lock()
		if lc.key != "" && l.byAddr[lc.key] >= l.perAddr {
			victim := l.idleOfLocked(lc.key)
			l.mu.Unlock()
			if victim == nil {
				refuseConn(c)
				return nil
			}
			victim.Close()
			continue
		}
		if len(l.conns) < l.max {
			lc.since = now
			l.conns[lc] = struct{}{}
			if lc.key != "" {
				l.byAddr[lc.key]++
			}
			l.mu.Unlock()
			return lc
		}
		victim, retry := l.victimLocked(now)
		l.mu.Unlock()
		if victim != nil {
			// Its server goroutine sees the close in its read and ends.
			victim.Close()
			continue
		}
		t := time.NewTimer(retry)
		select {
		case <-l.wake:
		case <-t.C:
		case <-l.done:
			t.Stop()
			c.Close()
			return nil
		}
		t.Stop()
	}
}

// idleOfLocked is key's connection idle longest between requests, or nil.
func (l *connLimiter) idleOfLocked(key string) *limitedConn {
	var idle *limitedConn
	for c := range l.conns {
		if c.key == key && c.state == http.StateIdle && (idle == nil || c.since.Before(idle.since)) {
			idle = c
		}
	}
	return idle
}

// perAddressRefusal is what a connection past its address's bound reads
// before it is closed: a status and an error a client can show, not a
// bare reset.
var perAddressRefusal = func() string {
	body := `{"error":{"message":"too many connections from this address: close some and retry",` +
		`"type":"` + ErrTypeBusy + `","param":null,"code":null}}` + "\n"
	return "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// refusing bounds the connections being refused at once; past it one is
// closed without its answer.
var refusing = make(chan struct{}, 64)

// refuseConn answers c perAddressRefusal and closes it, off the accept
// loop: it ends its side, then reads and drops what the client sent for
// at most unreadBodyLinger (64 KiB at most), so that the client reads the
// answer rather than a reset. With refusing full it closes c at once.
func refuseConn(c net.Conn) {
	select {
	case refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(unreadBodyLinger))
		if _, err := io.WriteString(c, perAddressRefusal); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// victimLocked picks the connection to close for a new one: the one idle
// longest, else the oldest still reading its first headers after grace.
// Without one, retry is when to look again.
func (l *connLimiter) victimLocked(now time.Time) (victim *limitedConn, retry time.Duration) {
	var idle, fresh *limitedConn
	for c := range l.conns {
		switch c.state {
		case http.StateIdle:
			if idle == nil || c.since.Before(idle.since) {
				idle = c
			}
		case http.StateNew:
			if fresh == nil || c.since.Before(fresh.since) {
				fresh = c
			}
		}
	}
	switch {
	case idle != nil:
		return idle, 0
	case fresh != nil && now.Sub(fresh.since) >= l.grace:
		return fresh, 0
	case fresh != nil:
		return nil, l.grace - now.Sub(fresh.since)
	}
	return nil, l.grace
}

// connState follows the server's view of each connection.
func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	lc.state, lc.since = s, time.Now()
	l.mu.Unlock()
	if s == http.StateIdle {
		l.signal()
	}
}

func (l *connLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// guard applies the body and write bounds to every request of h, and
// closes the connection after a response that starts before the request's
// body was read to its end.
func (l httpLimits) guard(h http.Handler) http.Handler {
	bodies := newBodyBudget(int64(l.BodyBytes), l.BodyWait)
	answers := newBodyBudget(int64(l.AnswerBytes), 0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// A deadline of the previous request on this connection must not
		// cut this one short (the server resets only the read deadline).
		_ = rc.SetWriteDeadline(time.Time{})
		sw := &stallWriter{ResponseWriter: w, rc: rc, stall: l.WriteStall, answers: answers,
			refusable: r.Method == http.MethodGet || r.Method == http.MethodHead}
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			// Also bounds the server's own read of an unread body after
			// the handler (to reuse the connection); cleared at the
			// body's end, so that a stream's wait for the client to
			// leave has no deadline.
			_ = rc.SetReadDeadline(time.Now().Add(l.Body))
			sw.body = &bodyDeadline{ReadCloser: r.Body, rc: rc}
			r.Body = sw.body
			r = withBodyBudget(r, bodies)
		}
		h.ServeHTTP(sw, r)
		// The server answers 200 for a handler that wrote nothing.
		sw.starting()
		if sw.closing {
			// After the handler the server still reads up to 256 KiB of
			// an unread body (to reuse the connection, which it will
			// not), after the answer went out: bound that read, or the
			// connection is held for the Body bound by a client that
			// announced more than it sent. Reading what did come keeps
			// the close from resetting the connection, which could lose
			// the answer on the client's side.
			_ = rc.SetReadDeadline(time.Now().Add(unreadBodyLinger))
		}
	})
}

// bodyDeadline clears the connection's read deadline once the body ends.
// Any other error keeps it: after a timeout the server's discard of the
// rest must fail as fast, not wait without a deadline.
type bodyDeadline struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *bodyDeadline) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// stallWriter gives each write WriteStall to go out, and closes the
// connection after a response that starts before the body was read.
type stallWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	stall   time.Duration
	body    *bodyDeadline // nil: the request has no body
	started bool
	closing bool // the answer started before the body's end
	// answers bounds the large answers being sent (answerBudget);
	// refusable: this request's answer may be refused for it.
	answers   *bodyBudget
	refusable bool
}

// smallAnswer is the largest answer sent without a share of the answer
// budget: 512 connections of such answers hold 32 MiB at most.
const smallAnswer = 64 << 10

// answerBudget is the answer budget of a request whose answer may be
// refused for want of it: a read (GET, HEAD) or an audit query
// (mayRefuseAnswer), neither of which changed anything, so that the
// client may simply retry; else nil. An answer is held in memory until its
// client has read it, at most WriteStall after it stopped reading: 64
// clients of one address that asked for the messages of a conversation of
// long messages (8 MiB each) and read nothing took a node from 300 MB to
// 1.1 GB, 300 of loopback to 4.8 GB. A chat's answer is never refused for
// it: the chat ran.
func answerBudget(w http.ResponseWriter) *bodyBudget {
	if s := stallOf(w); s != nil && s.refusable {
		return s.answers
	}
	return nil
}

// mayRefuseAnswer lets the budget of answers refuse w's answer although
// its request is not a read (an audit query, which changes nothing).
func mayRefuseAnswer(w http.ResponseWriter) {
	if s := stallOf(w); s != nil {
		s.refusable = true
	}
}

// stallOf is the stallWriter w is or wraps, or nil.
func stallOf(w http.ResponseWriter) *stallWriter {
	for {
		if s, ok := w.(*stallWriter); ok {
			return s
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}

// starting runs before the response's header goes out. If the request's
// body was not read to its end (404, 405, 401, 413, a handler that
// refused the request before reading it), the server would read the rest
// before sending the header, to reuse the connection: a client that
// announced more than it sent got nothing until the Body bound ended the
// connection. Connection: close makes the server answer at once and skip
// the rest.
func (s *stallWriter) starting() {
	if s.started {
		return
	}
	s.started = true
	if s.body != nil && !s.body.done {
		s.closing = true
		s.Header().Set("Connection", "close")
	}
}

func (s *stallWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx headers are not the response
		s.starting()
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *stallWriter) Write(p []byte) (int, error) {
	s.starting()
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.stall))
	return s.ResponseWriter.Write(p)
}

// FlushError sends the header (and what is buffered) when the handler
// flushes before writing; http.ResponseController calls it.
func (s *stallWriter) FlushError() error {
	s.starting()
	return s.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer
// (deadlines).
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
