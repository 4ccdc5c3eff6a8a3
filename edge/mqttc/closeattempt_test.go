package mqttc_test

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestNoConnectionAttemptAfterClose: a client closed while it waits to
// reconnect makes no further attempt. The wait was cut short by Close and
// paho went on to the attempt all the same, after Close had returned: a
// fleet of 200 clients closed while their broker dropped each connection
// soon after accepting it logged in 200 more times within 50 ms of Close
// (a password check each on a real broker, and a login that takes over
// any session holding the same client id), where 29 attempts were made in
// the 2 s before it.
func TestNoConnectionAttemptAfterClose(t *testing.T) {
	t.Parallel()
	url, accepts := lostThenDown(t)
	c := connect(t, url, func(o *mqttc.Options) {
		o.MaxReconnectInterval = 0 // the default: attempts every second early in an outage
		o.ReconnectJitter = -1     // the first at once, the next 1 s later
	})
	testenv.Eventually(t, waitFor, func() bool { return accepts.Load() >= 2 }, "a failed attempt to reconnect")
	time.Sleep(300 * time.Millisecond) // within the wait before the next attempt
	before := accepts.Load()
	c.Close()
	time.Sleep(quietPeriod) // the next attempt was due about 700 ms after Close
	if n := accepts.Load() - before; n != 0 {
		t.Fatalf("%d connection attempts after Close", n)
	}
}

// lostThenDown is a broker whose first connection is accepted and lost
// 50 ms later, and whose host then refuses every other one (the broker is
// down, its host up); accepts counts the connections made to it.
func lostThenDown(t *testing.T) (url string, accepts *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepts = new(atomic.Int32)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for conn, err := ln.Accept(); err == nil; conn, err = ln.Accept() {
			if accepts.Add(1) == 1 {
				_ = conn.SetDeadline(time.Now().Add(waitFor))
				if _, err := conn.Read(make([]byte, 512)); err == nil {
					_, _ = conn.Write([]byte{0x20, 2, 0, 0}) // CONNACK, accepted
					time.Sleep(50 * time.Millisecond)
				}
			}
			conn.Close()
		}
	}()
	return "tcp://" + ln.Addr().String(), accepts
}
