package testenv

import (
	"net"
	"testing"
	"time"
)

// pollInterval is how often Eventually and Start check their condition.
const pollInterval = 5 * time.Millisecond

// Eventually polls cond until it returns true and fails the test, naming
// what it waited for, if that does not happen within the given time. Call
// it from the test goroutine.
func Eventually(t testing.TB, within time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(pollInterval) // poll interval, not a wait for an outcome
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free when it was checked.
// Another process may take it before the caller binds it (the kernel hands
// the same range out for outgoing connections), so listen on port 0 instead
// wherever the program under test allows it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
