package rate

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := New(10, 3)
	for i := range 3 {
		if !l.Allow(t0) {
			t.Fatalf("event %d of the first burst refused", i)
		}
	}
	if l.Allow(t0) {
		t.Fatal("fourth event of a burst of 3 allowed")
	}
	if l.Allow(t0.Add(99 * time.Millisecond)) {
		t.Fatal("allowed before a token was earned (10/s: one per 100 ms)")
	}
	if !l.Allow(t0.Add(100 * time.Millisecond)) {
		t.Fatal("refused once a token was earned")
	}
	// A clock that goes back earns nothing and takes nothing away.
	if l.Allow(t0) {
		t.Fatal("allowed on a clock that went back")
	}
	// A long pause earns at most a burst.
	later := t0.Add(time.Hour)
	if !l.Full(later) {
		t.Fatal("not full after an hour")
	}
	n := 0
	for l.Allow(later) {
		n++
	}
	if n != 3 {
		t.Fatalf("after a pause allowed %d at once, want the burst 3", n)
	}
}

func TestLimiterSteadyRate(t *testing.T) {
	t0 := time.Unix(0, 0)
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

func TestLimiterZeroRate(t *testing.T) {
	l := New(0, 0)
	t0 := time.Unix(0, 0)
	if !l.Allow(t0) || l.Allow(t0.Add(time.Hour)) {
		t.Fatal("rate 0 burst 0 must allow exactly one event")
	}
}

func TestKeyedBoundsKeys(t *testing.T) {
	t0 := time.Unix(0, 0)
	k := NewKeyed(1, 1, 4)
	for i := range 4 {
		if !k.Allow(fmt.Sprint("a", i), t0) {
			t.Fatalf("first event of key %d refused", i)
		}
	}
	if k.Allow("a0", t0) {
		t.Fatal("second event of a0 within a second allowed")
	}
	// Every tracked limiter is empty: a fifth key is refused, not added.
	if k.Allow("new", t0) || k.Len() != 4 {
		t.Fatalf("fifth key allowed or tracked (len %d)", k.Len())
	}
	// Once they refilled they are forgotten and the new key fits.
	if !k.Allow("new", t0.Add(2*time.Second)) || k.Len() != 1 {
		t.Fatalf("new key after refill: len %d", k.Len())
	}
}
