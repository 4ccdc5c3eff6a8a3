package rate

import (
	"fmt"
	"testing"
	"time"
)

// t0 is the start of every fake clock in this package's tests.
var t0 = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

// step is one call on a Limiter at t0+at and what it must return.
type step struct {
	op   string // "allow", "take", "has" or "full"
	at   time.Duration
	n    int // tokens, for take and has
	want bool
}

func allow(at time.Duration, want bool) step       { return step{"allow", at, 1, want} }
func take(at time.Duration, n int, want bool) step { return step{"take", at, n, want} }
func has(at time.Duration, n int, want bool) step  { return step{"has", at, n, want} }
func full(at time.Duration, want bool) step        { return step{"full", at, 0, want} }

func TestLimiter(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name   string
		perSec float64
		burst  int
		steps  []step
	}{
		{name: "burst, then one token per 1/perSec", perSec: 10, burst: 3, steps: []step{
			allow(0, true), allow(0, true), allow(0, true), allow(0, false),
			allow(99*ms, false), allow(100*ms, true)}},
		{name: "a clock that goes back earns nothing and takes nothing away", perSec: 10, burst: 3, steps: []step{
			take(time.Second, 3, true), allow(0, false), allow(time.Second, false), allow(time.Second+100*ms, true)}},
		{name: "a long pause earns at most a burst", perSec: 10, burst: 3, steps: []step{
			take(0, 3, true), full(0, false), full(time.Hour, true),
			allow(time.Hour, true), allow(time.Hour, true), allow(time.Hour, true), allow(time.Hour, false)}},
		{name: "take n, then refill", perSec: 2, burst: 3, steps: []step{
			take(0, 1, true), take(0, 1, true), take(0, 1, true), take(0, 1, false),
			take(500*ms, 1, true), take(500*ms, 1, false), take(10*time.Second, 3, true)}},
		{name: "more than the burst never passes", perSec: 100, burst: 5, steps: []step{
			take(0, 6, false), take(time.Hour, 6, false), take(time.Hour, 5, true)}},
		{name: "a refused take takes nothing", perSec: 1, burst: 10, steps: []step{
			take(0, 8, true), take(0, 3, false), take(0, 2, true)}},
		{name: "has takes nothing", perSec: 1, burst: 2, steps: []step{
			has(0, 2, true), has(0, 2, true), has(0, 3, false), take(0, 2, true), has(0, 1, false), has(time.Second, 1, true)}},
		{name: "rate 0 burst 0 allows exactly one event", perSec: 0, burst: 0, steps: []step{
			allow(0, true), allow(time.Hour, false)}},
		{name: "a negative rate is rate 0", perSec: -5, burst: 2, steps: []step{
			take(0, 2, true), allow(time.Hour, false), full(time.Hour, false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.perSec, tt.burst)
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				var got bool
				switch s.op {
				case "allow":
					got = l.Allow(now)
				case "take":
					got = l.Take(now, s.n)
				case "has":
					got = l.Has(now, s.n)
				case "full":
					got = l.Full(now)
				}
				if got != s.want {
					t.Fatalf("step %d: %s(%d) at +%s = %v, want %v", i, s.op, s.n, s.at, got, s.want)
				}
			}
		})
	}
}

func TestLimiterSteadyRate(t *testing.T) {
	l := New(20, 20)
	allowed := 0
	for ms := range 10_000 { // 10 s, one attempt per millisecond
		if l.Allow(t0.Add(time.Duration(ms) * time.Millisecond)) {
			allowed++
		}
	}
	if allowed < 20+199 || allowed > 20+200 {
		t.Fatalf("allowed %d in 10 s at 20/s with burst 20, want 219..220", allowed)
	}
}

func ExampleLimiter() {
	// Two events per second, in bursts of at most three.
	l := New(2, 3)
	now := time.Unix(0, 0)
	fmt.Println(l.Allow(now), l.Allow(now), l.Allow(now), l.Allow(now))
	// Half a second later one token has come back: a 2-token take fails
	// and takes nothing, a 1-token take passes.
	now = now.Add(500 * time.Millisecond)
	fmt.Println(l.Take(now, 2), l.Take(now, 1))
	// Output:
	// true true true false
	// false true
}
