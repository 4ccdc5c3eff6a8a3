package rate

import (
	"fmt"
	"testing"
	"time"
)

func TestKeyedBoundsKeys(t *testing.T) {
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

func TestKeyedHas(t *testing.T) {
	k := NewKeyed(1, 2, 4)
	if !k.Has("a", t0) || k.Len() != 0 {
		t.Fatalf("an untracked key has no room, or Has tracked it (len %d)", k.Len())
	}
	k.Allow("a", t0)
	if !k.Has("a", t0) {
		t.Fatal("one event of a burst of two left no room")
	}
	k.Allow("a", t0)
	if k.Has("a", t0) || k.Has("a", t0.Add(500*time.Millisecond)) {
		t.Fatal("an empty limiter has room within a second")
	}
	if !k.Has("a", t0.Add(time.Second)) {
		t.Fatal("no room after a second's refill")
	}
	if !k.Allow("a", t0.Add(time.Second)) {
		t.Fatal("Has counted an event")
	}
}
