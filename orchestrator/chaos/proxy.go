package chaos

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds the proxy's connection to its target.
const dialTimeout = 5 * time.Second

// Proxy is a loopback TCP proxy between MQTT clients and a broker that can
// fail the way a network does. Cut is a pulled cable: connections stay open
// but every byte in either direction is dropped, and new connections are
// accepted and get nothing; Restore closes every connection that lived
// through the cut (its stream lost bytes, so it cannot go on) and forwards
// new ones again. Slow is a slow link: every chunk is forwarded late.
// Reset is a router reboot: every connection is reset at once.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every copy goroutine

	mu     sync.Mutex // guards the fields below
	cut    bool
	delay  time.Duration
	links  map[*link]struct{}
	closed bool
}

// link is one client connection and, unless it arrived during a cut, its
// connection to the target.
type link struct {
	client, server net.Conn // server is nil for a connection held in a cut
	broken         bool     // lived through a cut
}

// StartProxy listens on a free loopback port and forwards to target
// (host:port).
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start proxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut starts dropping every byte; connections stay open.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for l := range p.links {
		l.broken = true
	}
}

// Restore ends a cut: the connections that lived through it are closed, so
// their clients reconnect, and new connections are forwarded again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for l := range p.links {
		if l.broken {
			l.close()
			delete(p.links, l)
		}
	}
}

// Slow forwards every chunk d late in each direction, until Slow(0).
func (p *Proxy) Slow(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Reset resets every connection now (RST, not an orderly close); new
// connections are forwarded as before.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		if tc, ok := l.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		l.close()
		delete(p.links, l)
	}
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	for l := range p.links {
		l.close()
		delete(p.links, l)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (l *link) close() {
	l.client.Close()
	if l.server != nil {
		l.server.Close()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		l := &link{client: c}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		held := p.cut
		l.broken = held
		p.links[l] = struct{}{}
		p.mu.Unlock()
		if held {
			// Nothing gets through: read and drop until Restore closes it.
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(io.Discard, c)
			}()
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, dialTimeout)
		if err != nil {
			p.drop(l)
			continue
		}
		p.mu.Lock()
		l.server = s
		if _, ok := p.links[l]; !ok || p.closed {
			// Closed or restored while dialling.
			p.mu.Unlock()
			l.close()
			continue
		}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, c, s)
		go p.pipe(l, s, c)
	}
}

// pipe copies src to dst, dropping what arrives during a cut and holding
// each chunk for the delay of a slow link; when either side ends, the link
// is closed.
func (p *Proxy) pipe(l *link, src, dst net.Conn) {
	defer p.wg.Done()
	defer p.drop(l)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut, delay := p.cut, p.delay // Cut marked the link broken
			p.mu.Unlock()
			if !cut {
				if delay > 0 {
					time.Sleep(delay) // this direction waits, as on a real slow link
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return // EOF, reset, or closed by Restore/Reset/Close
		}
	}
}

// drop closes l and forgets it.
func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l.close()
	delete(p.links, l)
}
