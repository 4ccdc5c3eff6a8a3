package orchestrator

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// rawStatus sends req on a new connection and returns the response the
// server answers within d (it fails the test otherwise); with closed, the
// server must also close the connection within d.
func rawStatus(t *testing.T, addr, req string, d time.Duration, closed bool) *http.Response {
	t.Helper()
	c := dial(t, addr)
	c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("send: %v", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", d, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if closed {
		_, err := io.Copy(io.Discard, br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("answered %s, but the connection was still open after %v", resp.Status, d)
		}
	}
	return resp
}

// TestHTTPHeaderBytesBounded: a request's headers are bounded well below
// Go's 1 MiB default (500 token-less connections held 500 MB with it),
// and a browser's few KiB pass.
func TestHTTPHeaderBytesBounded(t *testing.T) {
	node, _, _ := startAPI(t, nil, Options{})
	addr := node.HTTPAddr()
	for _, tc := range []struct {
		name  string
		bytes int
		want  string
	}{
		{"browser-sized cookies", 8 << 10, "200"},
		{"64 KiB of headers", 64 << 10, "431"},
		{"1 MiB of headers", 1 << 20, "431"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := "X-A: " + strings.Repeat("a", 1000) + "\r\n"
			req := "GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat(line, tc.bytes/len(line)) + "\r\n"
			resp := rawStatus(t, addr, req, 3*time.Second, false)
			if !strings.HasPrefix(resp.Status, tc.want) {
				t.Fatalf("status %q, want %s", resp.Status, tc.want)
			}
		})
	}
}

// TestHTTPUnreadBodyAnsweredAtOnce: an answer that starts before the
// request's body was read to its end goes out at once, with the
// connection closed; the server used to wait (up to the Body bound) to
// discard a body the client announced but never sent, and the client got
// nothing.
func TestHTTPUnreadBodyAnsweredAtOnce(t *testing.T) {
	node, _, token := startAPI(t, nil, Options{Provider: mustScript(t, `{"name": "x", "turns": [{"content": "hi"}]}`)})
	addr := node.HTTPAddr()
	auth := "Authorization: Bearer " + token + "\r\n"
	for _, tc := range []struct {
		name, method, path, headers string
		announced                   int
		sent                        string
		want                        string
	}{
		{"unknown path", "POST", "/nope", "", 10, "abc", "404"},
		{"unknown path, token", "POST", "/nope", auth, 10, "abc", "404"},
		{"wrong method", "POST", "/v1/models", "", 10, "abc", "405"},
		{"wrong method on /", "POST", "/", "", 10, "abc", "405"},
		{"healthz with a body", "GET", "/healthz", "", 10, "abc", "200"},
		{"no token", "POST", "/v1/chat", "", 10, "abc", "401"},
		{"chunked, unknown path", "POST", "/nope", "Transfer-Encoding: chunked\r\n", -1, "3\r\nabc\r\n", "404"},
		{"too large", "POST", "/v1/chat", auth + "Content-Type: application/json\r\n", 2 << 20,
			`{"text":"` + strings.Repeat("a", 1<<20+100), "413"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fmt.Sprintf("Content-Length: %d\r\n", tc.announced)
			if tc.announced < 0 {
				cl = ""
			}
			req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\n%s%s\r\n%s", tc.method, tc.path, tc.headers, cl, tc.sent)
			start := time.Now()
			resp := rawStatus(t, addr, req, 2*time.Second, true)
			if !strings.HasPrefix(resp.Status, tc.want) {
				t.Fatalf("status %q, want %s", resp.Status, tc.want)
			}
			if !resp.Close {
				t.Fatal("the connection is kept: the server will read the rest of the body first")
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("answered after %v", d)
			}
		})
	}
	// A body read to its end keeps the connection alive.
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
	for range 2 {
		req, err := http.NewRequest("POST", "http://"+addr+"/v1/chat", strings.NewReader(`{"text":"hello"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("chat: %d, close %v", resp.StatusCode, resp.Close)
		}
	}
	if len(reused) != 2 || !reused[1] {
		t.Fatalf("the second chat did not reuse the connection: %v", reused)
	}
}

// TestGuardIdleMakesRoom: with every slot held by a kept-alive connection
// that sits idle after its request, or by one still sending its first
// headers, a new client is served at once, with or without the token; the
// connection closed to make room is the one idle longest. These used to
// keep every other client out (idle ones for as long as they asked again
// within the idle timeout).
func TestGuardIdleMakesRoom(t *testing.T) {
	const conns = 4
	limits := httpLimits{Conns: conns, NewGrace: 200 * time.Millisecond}
	node, base, token := startAPI(t, nil, Options{Provider: mustScript(t, `{"name": "x", "turns": [{"content": "hi"}]}`), httpLimits: limits})
	addr := node.HTTPAddr()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(t *testing.T, path string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s with every slot held: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("GET %s answered after %v", path, d)
		}
	}
	for _, tc := range []struct {
		name string
		// hold takes a slot with c.
		hold func(t *testing.T, c net.Conn)
	}{
		{"idle kept-alive", func(t *testing.T, c net.Conn) {
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
				t.Fatalf("healthz: %q %v", line, err)
			}
			c.SetReadDeadline(time.Time{})
		}},
		{"partial first headers", func(t *testing.T, c net.Conn) {
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
		}},
		{"nothing sent", func(t *testing.T, c net.Conn) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := make([]net.Conn, conns)
			for i := range held {
				held[i] = dial(t, addr)
				tc.hold(t, held[i])
			}
			for _, path := range []string{"/healthz", "/readyz", "/v1/models"} {
				get(t, path)
			}
			// Room was made by closing held connections.
			closed := 0
			for _, c := range held {
				c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if _, err := io.ReadAll(c); err == nil {
					closed++
				}
			}
			if closed == 0 {
				t.Fatal("no held connection was closed")
			}
			for _, c := range held {
				c.Close()
			}
		})
	}
}

// TestGuardVictim: the connection closed to make room is the one idle
// longest, else the oldest still on its first headers past the grace;
// one in a request is never closed.
func TestGuardVictim(t *testing.T) {
	now := time.Now()
	conn := func(s http.ConnState, age time.Duration) *limitedConn {
		return &limitedConn{state: s, since: now.Add(-age)}
	}
	for _, tc := range []struct {
		name  string
		conns []*limitedConn
		want  int // index in conns; -1: none
		retry time.Duration
	}{
		{"idle longest", []*limitedConn{conn(http.StateIdle, time.Second), conn(http.StateIdle, 3*time.Second), conn(http.StateNew, time.Minute)}, 1, 0},
		{"new past grace", []*limitedConn{conn(http.StateActive, time.Minute), conn(http.StateNew, 3*time.Second), conn(http.StateNew, 5*time.Second)}, 2, 0},
		{"new within grace", []*limitedConn{conn(http.StateActive, time.Minute), conn(http.StateNew, 1500*time.Millisecond)}, -1, 500 * time.Millisecond},
		{"all in requests", []*limitedConn{conn(http.StateActive, time.Minute), conn(http.StateHijacked, time.Minute)}, -1, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &connLimiter{grace: 2 * time.Second, conns: map[*limitedConn]struct{}{}}
			for _, c := range tc.conns {
				l.conns[c] = struct{}{}
			}
			v, retry := l.victimLocked(now)
			var want *limitedConn
			if tc.want >= 0 {
				want = tc.conns[tc.want]
			}
			if v != want || retry != tc.retry {
				t.Fatalf("victim %+v retry %v, want %+v %v", v, retry, want, tc.retry)
			}
		})
	}
}
