package mqttc

import (
	"testing"
	"time"
)

// TestPacer: the waits before reconnect attempts (backoff.go), by event,
// with the clock and the random draws in the test's hands. A draw of -1
// asks for the lowest value, anything else for the highest.
func TestPacer(t *testing.T) {
	const s = time.Second
	type step struct {
		event string        // "lost", "connected", "refused", "unusable", "wait" (advance the clock), "next"
		d     time.Duration // the clock's advance for "wait"
		low   bool          // draw the lowest value (else the highest)
		want  time.Duration // for "next"
	}
	next := func(want time.Duration, low bool) step { return step{event: "next", want: want, low: low} }
	tests := []struct {
		name        string
		jitter, max time.Duration
		steps       []step
	}{
		{"first attempt within the jitter, then every 0.5-1.5 s", 2 * s, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"},
			next(0, true), next(s/2, true), next(3*s/2, false), next(3*s/2, false), next(s/2, true),
			{event: "connected"}, {event: "wait", d: time.Minute}, {event: "lost"}, next(2*s, false),
		}},
		{"still fast at 119 s, doubling from 1 s after 2 minutes", 2 * s, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"},
			next(2*s, false), {event: "wait", d: 119 * s}, next(3*s/2, false),
			{event: "wait", d: 2 * s}, next(s, false), next(2*s, false), next(2*s, true), next(8*s, false),
		}},
		{"refused: doubling at once, capped", 2 * s, 8 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"},
			next(2*s, false), {event: "refused"}, next(s, false), next(2*s, false), next(2*s, true), next(8*s, false), next(8*s, false),
		}},
		{"a connection lost soon after it was made continues the outage, doubling", 2 * s, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"},
			next(2*s, false), next(3*s/2, false),
			{event: "connected"}, {event: "wait", d: 3 * s}, {event: "lost"}, next(s, false),
			{event: "connected"}, {event: "wait", d: 3 * s}, {event: "lost"}, next(2*s, false),
			{event: "connected"}, {event: "wait", d: 3 * s}, {event: "lost"}, next(4*s, false),
		}},
		// paho reports a loss on a goroutine of its own, maybe after its
		// first attempt to reconnect has asked for its wait.
		{"a loss reported after the first attempt counts once", 2 * s, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, next(2*s, false), {event: "lost"}, next(3*s/2, false),
			{event: "connected"}, {event: "wait", d: 3 * s}, next(s, false), {event: "lost"}, next(2*s, false),
		}},
		{"the first connection, lost at once, starts a fast outage", 2 * s, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: s}, {event: "lost"}, next(2*s, false), next(3*s/2, false),
		}},
		{"a connection that lasted starts a new, fast outage", 2 * s, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "refused"}, {event: "lost"},
			next(2*s, false), next(3*s/2, false),
		}},
		// The SUBACK of a restored subscription may be awaited longer than
		// stableConnection (ConnectTimeout): the drop still doubles.
		{"a connection dropped for a subscription not restored doubles, however long it lasted", 2 * s, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"}, next(2*s, false),
			{event: "connected"}, {event: "wait", d: 15 * s}, {event: "unusable"}, {event: "lost"}, next(s, false),
			{event: "connected"}, {event: "wait", d: 15 * s}, {event: "unusable"}, {event: "lost"}, next(2*s, false),
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"}, next(2*s, false), next(3*s/2, false),
		}},
		{"without jitter: the middle of each range", -1, 30 * s, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"},
			next(0, false), next(s, false), {event: "refused"}, next(3*s/4, false), next(3*s/2, false),
		}},
		{"a small MaxReconnectInterval caps every wait", 2 * s, 100 * time.Millisecond, []step{
			{event: "connected"}, {event: "wait", d: time.Hour}, {event: "lost"},
			next(100*time.Millisecond, false), next(100*time.Millisecond, false), next(50*time.Millisecond, true),
			{event: "refused"}, next(100*time.Millisecond, false),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _, err := Options{BrokerURL: "tcp://127.0.0.1:1", ReconnectJitter: tt.jitter, MaxReconnectInterval: tt.max}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
			low := false
			p := &pacer{jitter: o.ReconnectJitter, max: o.MaxReconnectInterval, now: func() time.Time { return now }, outage: now,
				randN: func(n int64) int64 {
					if low {
						return 0
					}
					return n - 1
				}}
			for i, st := range tt.steps {
				switch st.event {
				case "lost":
					p.lost()
				case "connected":
					p.connected()
				case "refused":
					p.refused()
				case "unusable":
					p.unusable()
				case "wait":
					now = now.Add(st.d)
				case "next":
					low = st.low
					if got := p.next(); got != st.want {
						t.Fatalf("step %d: next() = %v, want %v", i, got, st.want)
					}
				}
			}
		})
	}
}
