package chaos

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads what comes back within d.
func roundTrip(c net.Conn, msg string, d time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	n, err := io.ReadFull(c, buf)
	return string(buf[:n]), err
}

func TestProxyCutAndRestore(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	p, err := StartProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := dial(t, p.Addr())
	if got, err := roundTrip(before, "hello", 5*time.Second); err != nil || got != "hello" {
		t.Fatalf("before the cut: %q, %v", got, err)
	}

	p.Cut()
	// While cut, the old connection stays open but nothing comes back, and
	// a new one is accepted and gets nothing either.
	if got, err := roundTrip(before, "lost", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("during the cut the old connection answered %q, %v; want a read timeout", got, err)
	}
	during := dial(t, p.Addr())
	if got, err := roundTrip(during, "lost", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("during the cut a new connection answered %q, %v; want a read timeout", got, err)
	}

	p.Restore()
	// Connections that lived through the cut are closed; their clients see
	// it at once and reconnect.
	for _, c := range []net.Conn{before, during} {
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection from the cut was not closed by Restore: %v", err)
		}
	}
	after := dial(t, p.Addr())
	if got, err := roundTrip(after, "again", 5*time.Second); err != nil || got != "again" {
		t.Fatalf("after the cut: %q, %v", got, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("the proxy still accepts after Close")
	}
	// Close waited for the proxy's goroutines; the echo server's end with
	// their connections, which the proxy closed.
	for _, c := range []net.Conn{before, during, after} {
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines+1 { // the echo server's accept loop
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before the proxy started", runtime.NumGoroutine(), goroutines)
		}
		time.Sleep(poll)
	}
}

func TestProxyUnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	p, err := StartProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, p.Addr())
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a client of an unreachable target was not disconnected: %v", err)
	}
}

func TestProxySlowAndReset(t *testing.T) {
	p, err := StartProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, p.Addr())

	const lag = 150 * time.Millisecond
	p.Slow(lag)
	start := time.Now()
	if got, err := roundTrip(c, "slow", 5*time.Second); err != nil || got != "slow" {
		t.Fatalf("on a slow link: %q, %v", got, err)
	}
	// Each direction holds the chunk: there and back is two lags at least.
	if took := time.Since(start); took < 2*lag {
		t.Fatalf("a round trip on a slow link took %s, want at least %s", took, 2*lag)
	}
	p.Slow(0)
	if got, err := roundTrip(c, "fast", 5*time.Second); err != nil || got != "fast" {
		t.Fatalf("after the slow link: %q, %v", got, err)
	}

	p.Reset()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after Reset the client read %v, want a connection reset", err)
	}
	again := dial(t, p.Addr())
	if got, err := roundTrip(again, "again", 5*time.Second); err != nil || got != "again" {
		t.Fatalf("after a reset a new connection got %q, %v", got, err)
	}
}
