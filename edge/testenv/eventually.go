package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
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

// FreePort returns a TCP port that was free on every address when it was
// checked. It is picked below the kernel's ephemeral range (see
// ephemeralLow), from which the kernel hands out ports for outgoing
// connections and for listeners on port 0: a socket opened by the
// program under test or by a peer cannot take it by accident between the
// check and the caller's bind, which a port the kernel chose could. Two
// callers in one process never get the same port; another test process
// picking the same one at random is still possible, so listen on port 0
// wherever the program under test allows it.
func FreePort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	if low-freePortMin < 1000 {
		// An ephemeral range that leaves no room below it: take the
		// kernel's choice.
		return kernelPort(t)
	}
	for range 200 {
		p := freePortMin + rand.IntN(low-freePortMin)
		if _, taken := handedOut.LoadOrStore(p, true); taken {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf(":%d", p)); err == nil {
			l.Close()
			return p
		}
	}
	return kernelPort(t)
}

// freePortMin is the lowest port FreePort picks: below it are the
// well-known and many registered services' ports.
const freePortMin = 10000

// handedOut holds the ports FreePort returned in this process.
var handedOut sync.Map

// ephemeralLow is the first port of the kernel's ephemeral range, or
// 32768 (Linux's default) when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 0 {
		return 32768
	}
	return n
}

// kernelPort is a port the kernel chose for a listener on 127.0.0.1:0.
func kernelPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
