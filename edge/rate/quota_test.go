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
