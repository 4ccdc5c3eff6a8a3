package chaos

import (
	"net"
	"sync"
	"testing"
	"time"
)

// flakyProxy sits between the campaign's agent and the node's broker. Its
// network is in one of three states: it forwards, it forwards every chunk
// late (a slow link), or it drops every byte while connections stay open (a
// pulled cable). Cut resets every connection at once (a router reboot).
// Restoring from drop closes the connections that lost bytes, since their
// stream cannot go on.
type flakyProxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every pipe

	mu     sync.Mutex // guards the fields below
	mode   proxyMode
	delay  time.Duration
	conns  map[*proxyLink]struct{}
	closed bool
}

type proxyMode int

const (
	proxyPass proxyMode = iota
	proxyDelay
	proxyDrop
)

// proxyLink is one client connection and its connection to the target.
type proxyLink struct {
	client, server net.Conn
	lost           bool // bytes were dropped: the stream is broken
}

func (l *proxyLink) close() {
	l.client.Close()
	l.server.Close()
}

// startFlakyProxy forwards a loopback port to target until the test ends.
func startFlakyProxy(t *testing.T, target string) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{target: target, ln: ln, conns: map[*proxyLink]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *flakyProxy) addr() string { return p.ln.Addr().String() }

func (p *flakyProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, dialTimeout)
		if err != nil {
			c.Close() // the broker is down (its node was killed): the agent retries
			continue
		}
		l := &proxyLink{client: c, server: s}
		p.mu.Lock()
		if p.closed { // closed while dialling
			p.mu.Unlock()
			l.close()
			return
		}
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, c, s)
		go p.pipe(l, s, c)
	}
}

// pipe copies from src to dst chunk by chunk, as the state says.
func (p *flakyProxy) pipe(l *proxyLink, src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
		l.close()
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode, delay := p.mode, p.delay
			if mode == proxyDrop {
				l.lost = true
			}
			p.mu.Unlock()
			switch mode {
			case proxyDrop:
				continue
			case proxyDelay:
				time.Sleep(delay) // a slow link: this direction waits, as a real one would
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the deferred close ends both sides
		}
	}
}

// set changes the state; back to pass, every connection that lost bytes is
// closed.
func (p *flakyProxy) set(mode proxyMode, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.delay = mode, delay
	if mode == proxyPass {
		for l := range p.conns {
			if l.lost {
				l.close()
				delete(p.conns, l)
			}
		}
	}
}

// cut resets every connection now.
func (p *flakyProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.conns {
		if tc, ok := l.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not an orderly close
		}
		l.close()
		delete(p.conns, l)
	}
}

func (p *flakyProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for l := range p.conns {
		l.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
