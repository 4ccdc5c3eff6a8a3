package rate

import (
	"fmt"
	"testing"
	"time"
)

func TestQuotaPerKey(t *testing.T) {
	q := NewQuota(3, time.Minute)
	for i := 0; i < 10; i++ {
		q.Allow("a", t0)
	}
	if _, ok := q.Allow("b", t0); !ok {
		t.Fatal("key b refused because of key a")
	}
	if s, ok := q.Allow("a", t0.Add(time.Minute)); !ok || s != 7 {
		t.Fatalf("a in the next window = (%d, %v), want (7, true)", s, ok)
	}
	if q.Refused() != 7 {
		t.Fatalf("Refused = %d", q.Refused())
	}
	for i := 0; i < DefaultMaxKeys; i++ {
		q.Allow(fmt.Sprint("k", i), t0.Add(time.Minute))
	}
	if _, ok := q.Allow("new", t0.Add(time.Minute)); ok {
		t.Fatal("a key beyond DefaultMaxKeys was admitted while all windows are live")
	}
	if _, ok := q.Allow("new", t0.Add(3*time.Minute)); !ok {
		t.Fatal("ended windows were not forgotten")
	}
}

// TestQuotaKept: a refusal taken back (an event stored all the same) counts
// neither in Refused nor in the next admitted event's count, also for a
// key refused because every window was live; a key with nothing refused
// keeps its counts.
func TestQuotaKept(t *testing.T) {
	q := NewQuota(1, time.Minute)
	q.Allow("a", t0)
	q.Kept("a") // nothing refused yet: nothing to take back
	for range 3 {
		q.Allow("a", t0)
	}
	q.Kept("a")
	if n := q.Refused(); n != 2 {
		t.Fatalf("Refused = %d after 3 refusals and one kept, want 2", n)
	}
	if s, ok := q.Allow("a", t0.Add(time.Minute)); !ok || s != 2 {
		t.Fatalf("a in the next window = (%d, %v), want (2, true)", s, ok)
	}
	for i := 0; i < DefaultMaxKeys; i++ {
		q.Allow(fmt.Sprint("k", i), t0.Add(time.Minute))
	}
	if _, ok := q.Allow("new", t0.Add(time.Minute)); ok {
		t.Fatal("a key beyond DefaultMaxKeys was admitted while all windows are live")
	}
	before := q.Refused()
	q.Kept("new")
	if n := q.Refused(); n != before-1 {
		t.Fatalf("Refused = %d after an untracked key's refusal was kept, want %d", n, before-1)
	}
}
