package mqttc

import (
	"sync"
	"time"
)

// How a client paces its attempts to reconnect after a lost connection.
// paho waited 1 s, then doubled up to MaxReconnectInterval, between failed
// attempts, however cheap they were: 50 agents whose node restarted in 10 s
// were all back 9.4 s after it was ready (half of them 1.9 s after, the
// slowest tenth 8.4 s and more), and an outage of 20 s cost them 15 s more,
// although an attempt the broker's host refuses costs it nothing. The
// client now paces the attempts itself (paho's own waits are cut to a
// millisecond, reconnectPahoWait):
//
//   - the first attempt after a loss waits a random 0 to ReconnectJitter,
//     so that a fleet whose connections dropped at once does not come back
//     in one burst of password checks;
//   - during the first fastReconnectFor of an outage, an attempt follows
//     the last failed one after fastReconnectInterval, half of it more or
//     less at random: an agent is back within about 1.5 s of its broker,
//     and a fleet's attempts are spread evenly over that time;
//   - after that, and at once after a refusal (bad credentials) or after a
//     reconnection lost within stableConnection of being made (two clients
//     with one client id taking it from each other), or after a
//     connection dropped because a subscription was not restored
//     (restore.go), the waits double from
//     fastReconnectInterval up to MaxReconnectInterval, each a random half
//     to whole of its step.
const (
	// fastReconnectInterval is the mean wait between attempts early in an
	// outage (and the first step of the doubling after it).
	fastReconnectInterval = time.Second
	// fastReconnectFor is how long an outage gets attempts every
	// fastReconnectInterval: longer than a node's restart, even on a Pi.
	fastReconnectFor = 2 * time.Minute
	// stableConnection is how long a connection has to last for its loss
	// to start a new outage rather than continue the last one.
	stableConnection = 10 * time.Second
	// reconnectPahoWait is what paho itself waits between attempts.
	reconnectPahoWait = time.Millisecond
)

// pacer decides the wait before each attempt to reconnect (see above). It
// is safe for concurrent use: paho reports losses, attempts and connections
// on goroutines of its own.
type pacer struct {
	jitter, max time.Duration // Options.ReconnectJitter, MaxReconnectInterval
	now         func() time.Time
	randN       func(n int64) int64 // uniform in [0, n)

	mu          sync.Mutex // guards the fields below
	outage      time.Time  // when the current outage began
	connectedAt time.Time  // when the last connection was made
	up          bool       // connected, and its loss not noted yet
	lostOnce    bool       // a connection was lost before
	reconnected bool       // the last connection followed a lost one
	attempts    int        // attempts made in the current outage
	slow        bool       // waits double (refused, flapping, or a long outage)
	slowFrom    int        // the attempt from which they double
	dropped     bool       // the client drops this connection (unusable)
}

// slowDown makes the waits double from the next attempt on, unless they
// already do; p.mu is held.
func (p *pacer) slowDown() {
	if !p.slow {
		p.slow, p.slowFrom = true, p.attempts
	}
}

// connected notes a connection made.
func (p *pacer) connected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connectedAt = p.now()
	p.reconnected = p.lostOnce
	p.up = true
	p.dropped = false
}

// lost notes a lost connection. paho reports the loss on a goroutine of
// its own, which may run after its first reconnect attempt: next notes
// the loss too, and the first of the two to run counts it.
func (p *pacer) lost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteLoss()
}

// noteLoss starts a new outage, or goes on with the last one when the
// connection was a reconnection lost soon after it was made; nothing when
// the loss of the last connection was noted already. p.mu is held.
func (p *pacer) noteLoss() {
	if !p.up {
		return
	}
	p.up = false
	now := p.now()
	p.lostOnce = true
	if p.dropped || p.reconnected && now.Sub(p.connectedAt) < stableConnection {
		p.dropped = false
		p.slowDown()
		return
	}
	p.outage, p.attempts, p.slow, p.reconnected = now, 0, false, false
}

// refused notes an attempt the broker refused (bad credentials, not
// authorised): retrying soon will not help.
func (p *pacer) refused() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slowDown()
}

// unusable notes that the client drops the connection it made, because
// the broker refused a subscription or did not acknowledge it in time
// (restore.go): like a refusal, retrying soon will not help, however long
// the connection took to give up.
func (p *pacer) unusable() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropped = true
	p.slowDown()
}

// next returns the wait before the next attempt and counts the attempt.
func (p *pacer) next() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteLoss()
	if p.now().Sub(p.outage) >= fastReconnectFor {
		p.slowDown()
	}
	n := p.attempts
	p.attempts++
	fast := min(fastReconnectInterval, p.max)
	switch {
	case n == 0 && !p.slow:
		return p.uniform(0, p.jitter)
	case !p.slow:
		return p.uniform(fast/2, min(fast+fast/2, p.max))
	}
	step := fast
	for range n - p.slowFrom {
		if step >= p.max/2 {
			step = p.max
			break
		}
		step *= 2
	}
	step = min(step, p.max)
	return p.uniform(step/2, step)
}

// uniform is a random duration in [lo, hi]; without jitter (a negative
// Options.ReconnectJitter), the middle of it.
func (p *pacer) uniform(lo, hi time.Duration) time.Duration {
	switch {
	case hi <= lo:
		return max(lo, 0)
	case p.jitter <= 0:
		return lo + (hi-lo)/2
	}
	return lo + time.Duration(p.randN(int64(hi-lo)+1))
}
