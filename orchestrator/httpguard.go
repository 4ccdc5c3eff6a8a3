package orchestrator

import (
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// httpLimits bound what one client of the API can hold. Without them a
// client needed no token to keep a connection (and its goroutine and
// buffers) for ever: a request announcing a body it never sends held the
// connection while the server waited to discard the body after the 401,
// an idle kept-alive connection was never closed, and a client that
// stopped reading a stream held its handler in a write.
type httpLimits struct {
	// Conns is the most connections served at once; more wait in the
	// listen queue until one closes.
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
}

// defaultHTTPLimits: 512 connections are about 10 MB of buffers and
// goroutines at most; a minute lets a 4 MiB body through a slow link
// and a phone on a bad network catch up.
var defaultHTTPLimits = httpLimits{Conns: 512, Idle: 2 * time.Minute, Body: time.Minute, WriteStall: time.Minute}

// withDefaults fills the zero fields from defaultHTTPLimits.
func (l httpLimits) withDefaults() httpLimits {
	d := defaultHTTPLimits
	if l.Conns > 0 {
		d.Conns = l.Conns
	}
	if l.Idle > 0 {
		d.Idle = l.Idle
	}
	if l.Body > 0 {
		d.Body = l.Body
	}
	if l.WriteStall > 0 {
		d.WriteStall = l.WriteStall
	}
	return d
}

// listener bounds ln to l.Conns connections at once.
func (l httpLimits) listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, l.Conns)
}

// guard applies the body and write bounds to every request of h.
func (l httpLimits) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// A deadline of the previous request on this connection must not
		// cut this one short (the server resets only the read deadline).
		_ = rc.SetWriteDeadline(time.Time{})
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			// Also bounds the server's own read of an unread body after
			// the handler (to reuse the connection); cleared at the
			// body's end, so that a stream's wait for the client to
			// leave has no deadline.
			_ = rc.SetReadDeadline(time.Now().Add(l.Body))
			r.Body = &bodyDeadline{ReadCloser: r.Body, rc: rc}
		}
		h.ServeHTTP(&stallWriter{ResponseWriter: w, rc: rc, stall: l.WriteStall}, r)
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

// stallWriter gives each write WriteStall to go out.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (s *stallWriter) Write(p []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.stall))
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the server's writer (Flush,
// deadlines).
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
