package cold

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// tripProxy forwards loopback TCP to a target address and, once armed,
// signals tripped as soon as a single client connection has sent more than
// threshold bytes: the request of a large batch is on its way to the server.
type tripProxy struct {
	ln        net.Listener
	target    string
	threshold int64
	armed     atomic.Bool
	tripped   chan struct{}
	once      sync.Once
	wg        sync.WaitGroup

	mu    sync.Mutex // guards conns
	conns []net.Conn // every connection, closed at cleanup
}

func startTripProxy(t *testing.T, target string, threshold int64) *tripProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tripProxy{ln: ln, target: target, threshold: threshold, tripped: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		// Clients keep idle connections open; end them so serve returns.
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *tripProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *tripProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

func (p *tripProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(c, s)
		c.Close()
		close(done)
	}()
	var sent int64
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := s.Write(buf[:n]); werr != nil {
				break
			}
			sent += int64(n)
			if p.armed.Load() && sent > p.threshold {
				p.once.Do(func() { close(p.tripped) })
			}
		}
		if err != nil {
			break
		}
	}
	s.Close()
	<-done
}

// The server is SIGKILLed while a large batch is on its way to it (it may
// have received all, part or none of it): after a restart nothing is lost,
// nothing is doubled, and the cold chain verifies.
func TestServerKilledMidBatch(t *testing.T) {
	t.Parallel()
	srv := sqldtest.Start(t, sqldtest.Options{})
	proxy := startTripProxy(t, strings.TrimPrefix(srv.URL(), "http://"), 64<<10)
	warm, path := openWarm(t)
	c := openCold(t, proxy.url(), "")
	c.cfg.BatchSize = 400
	// The request cut by the trip hangs until its timeout: keep it short,
	// so that a busy machine sees the failure well within the wait below.
	c.cfg.RequestTimeout = 5 * time.Second
	fill(t, warm, 4)
	first := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, first, warm), "first records shipped")
	// The backlog is written while no shipper runs, so that the next one
	// starts with batches of 400 records: requests far larger than the
	// trip threshold. (A shipper running beside fill would ship it in
	// small pieces, maybe all of it before the proxy is armed.)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	fill(t, warm, 200) // 1000 records
	proxy.armed.Store(true)
	sh := startShipper(t, warm, c)
	select {
	case <-proxy.tripped:
	case <-time.After(60 * time.Second): // a bound on a hang, not a timing claim
		t.Fatalf("no request of more than 64 KiB reached the server within 60s; shipper status %+v", sh.Status())
	}
	srv.Kill()
	testenv.Eventually(t, 60*time.Second, func() bool { return sh.Status().Failures > 0 }, "the shipper to see the failure")
	t.Logf("failure while the server was down: %s", sh.Status().LastError)
	srv.Restart()
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipper to catch up after the restart")
	checkSame(t, c, path, warm.ChainID())
}
