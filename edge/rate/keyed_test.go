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
