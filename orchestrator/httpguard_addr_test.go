package orchestrator

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// fakeAddr is a net.Addr that prints as its value.
type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

func TestPerAddressKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:40000", ""},
		{"127.0.0.2:40000", ""},
		{"[::1]:40000", ""},
		{"[::ffff:127.0.0.1]:40000", ""},
		{"192.0.2.7:40000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:40000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:40000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::9]:1", "2001:db8:1:2::/64"},
		{"@", ""},
		{"/run/evoclaw.sock", ""},
	} {
		if got := perAddressKey(fakeAddr(tc.addr)); got != tc.want {
			t.Errorf("perAddressKey(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := perAddressKey(nil); got != "" {
		t.Errorf("perAddressKey(nil) = %q, want none", got)
	}
}

// dialFrom connects to addr from the local IP from (any 127/8 address is
// this machine's on Linux).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestGuardPerAddress: one address holds at most PerAddress connections.
// One more is served by closing that address's own idle connection; with
// all of them in requests (a client that pipelines and never reads holds
// its slot in a write) it is answered 429 and closed at once, and another
// address is still served at once. Before, one address could hold every
// slot and every other client waited for one to free.
func TestGuardPerAddress(t *testing.T) {
	const perAddr = 3
	limits := httpLimits{PerAddress: perAddr, addrKey: func(a net.Addr) string { return rate.AddressKey(a.String()) }}
	node, _, token := startAPI(t, nil, Options{Provider: mustScript(t, `{"name": "x", "turns": [{"content": "hi"}]}`), httpLimits: limits})
	addr := node.HTTPAddr()
	healthz := func(t *testing.T, c net.Conn) *http.Response {
		t.Helper()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer to /healthz: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.SetReadDeadline(time.Time{})
		return resp
	}
	for _, tc := range []struct {
		name string
		from string // the address holding connections, one per case
		hold func(t *testing.T, c net.Conn)
		want int // the status the next connection of the same address gets
	}{
		{"in requests", "127.0.0.3", func(t *testing.T, c net.Conn) {
			// A body that never ends: the handler reads it for the body bound.
			fmt.Fprintf(c, "POST /v1/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\":", token)
		}, http.StatusTooManyRequests},
		{"idle kept-alive", "127.0.0.4", func(t *testing.T, c net.Conn) {
			if resp := healthz(t, c); resp.StatusCode != 200 {
				t.Fatalf("held connection: /healthz %d", resp.StatusCode)
			}
		}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := make([]net.Conn, perAddr)
			for i := range held {
				held[i] = dialFrom(t, tc.from, addr)
				tc.hold(t, held[i])
			}
			time.Sleep(100 * time.Millisecond) // the server has seen each request start
			start := time.Now()
			c := dialFrom(t, tc.from, addr)
			resp := healthz(t, c)
			if resp.StatusCode != tc.want {
				t.Fatalf("next connection of the same address: %d, want %d", resp.StatusCode, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("answered after %v", d)
			}
			if tc.want == http.StatusTooManyRequests {
				if resp.Header.Get("Retry-After") == "" || !resp.Close {
					t.Fatalf("429 without Retry-After or Connection: close: %v", resp.Header)
				}
				waitClosed(t, c, 2*time.Second)
			} else {
				closed := 0
				for _, h := range held {
					h.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
					if _, err := io.ReadAll(h); err == nil {
						closed++
					}
				}
				if closed != 1 {
					t.Fatalf("%d of the address's idle connections closed to make room, want 1", closed)
				}
			}
			other := dialFrom(t, "127.0.0.2", addr)
			if resp := healthz(t, other); resp.StatusCode != 200 {
				t.Fatalf("another address: /healthz %d", resp.StatusCode)
			}
			for _, h := range held {
				h.Close()
			}
		})
	}
}
