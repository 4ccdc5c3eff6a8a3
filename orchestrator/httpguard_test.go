package orchestrator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// waitClosed reads c until the server closes it (EOF or reset) and
// returns what it sent; it fails after within.
func waitClosed(t *testing.T, c net.Conn, within time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v (read so far: %q)", within, b)
	}
	return string(b)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAPIDoesNotHoldConnectionsForClients: a client without the token
// announcing a body it never sends gets its 401 and the connection
// closed at once (it was held while the server waited for the body); a
// request with the token whose body stalls, and an idle kept-alive
// connection, are closed after their bounds.
func TestAPIDoesNotHoldConnectionsForClients(t *testing.T) {
	limits := httpLimits{Idle: 300 * time.Millisecond, Body: 300 * time.Millisecond}
	node, _, token := startAPI(t, nil, Options{Provider: mustScript(t, `{"name": "x", "turns": [{"content": "hi"}]}`), httpLimits: limits})
	addr := node.HTTPAddr()

	t.Run("no token, body never sent", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n")
		// Well under the body bound: the 401 does not wait for it.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		status, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(status, " 401 ") {
			t.Fatalf("status line %q, %v", status, err)
		}
		waitClosed(t, c, 5*time.Second)
	})
	t.Run("token, body stalls", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /v1/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\":", token)
		start := time.Now()
		got := waitClosed(t, c, 10*time.Second)
		if strings.Contains(got, " 200 ") {
			t.Fatalf("a stalled body was answered 200: %q", got)
		}
		if d := time.Since(start); d < limits.Body {
			t.Fatalf("closed after %v, before the body bound %v", d, limits.Body)
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		got := waitClosed(t, c, 10*time.Second)
		if !strings.Contains(got, " 200 ") {
			t.Fatalf("healthz: %q", got)
		}
	})
	// A chat still works, kept-alive connections and all.
	for range 3 {
		var out struct{ Text string }
		if code := call(t, "POST", "http://"+addr+"/v1/chat", token, map[string]any{"text": "hello"}, &out); code != 200 {
			t.Fatalf("chat %d %+v", code, out)
		}
	}
}

// TestGuardBounds checks the guard on a plain server: a client that stops
// reading ends the handler's writes; a stream whose client reads outlives
// every bound, its request's context intact; connections past the limit
// wait for one to close.
func TestGuardBounds(t *testing.T) {
	limits := httpLimits{Conns: 2, Idle: time.Minute, Body: 200 * time.Millisecond, WriteStall: 300 * time.Millisecond}
	writeErr := make(chan error, 1)
	streamDone := make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /flood", func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
	})
	mux.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			streamDone <- err
			return
		}
		rc := http.NewResponseController(w)
		for i := range 12 {
			select {
			case <-r.Context().Done():
				streamDone <- fmt.Errorf("context ended at event %d: %w", i, context.Cause(r.Context()))
				return
			case <-time.After(100 * time.Millisecond):
			}
			fmt.Fprintf(w, "data: %d\n\n", i)
			rc.Flush()
		}
		streamDone <- nil
	})
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	release := make(chan struct{})
	mux.HandleFunc("GET /hold", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = limits.withDefaults().apply(srv.Config, srv.Listener)
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	t.Run("client stops reading", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
		select {
		case err := <-writeErr:
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("write ended with %v, want a timeout", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler is still writing to a client that stopped reading")
		}
		c.Close()
	})
	t.Run("stream outlives the bounds", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/stream", "application/json", strings.NewReader(`{"x":1}`))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.Contains(string(body), "data: 11") {
			t.Fatalf("stream %q, %v", body, err)
		}
		if err := <-streamDone; err != nil {
			t.Fatal(err)
		}
	})
	// Connections in a request (idle ones are closed to make room:
	// TestGuardIdleMakesRoom).
	t.Run("connections past the limit wait", func(t *testing.T) {
		srv.CloseClientConnections()
		a, b := dial(t, addr), dial(t, addr)
		// Both accepted (a request on each is answered), both kept.
		for _, c := range []net.Conn{a, b} {
			fmt.Fprintf(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
				t.Fatalf("held connection: %q %v", line, err)
			}
		}
		client := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
		if resp, err := client.Get(srv.URL + "/ok"); err == nil {
			resp.Body.Close()
			t.Fatal("a third connection was served while two are held")
		}
		a.Close()
		defer close(release)
		client.Timeout = 5 * time.Second
		resp, err := client.Get(srv.URL + "/ok")
		if err != nil {
			t.Fatalf("after one closed: %v", err)
		}
		resp.Body.Close()
	})
}
