package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

func TestBucket(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		burst float64
		takes []struct {
			at   time.Duration
			n    float64
			want bool
		}
	}{
		{name: "burst then refill", rate: 2, burst: 3, takes: []struct {
			at   time.Duration
			n    float64
			want bool
		}{{0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, false}, {500 * time.Millisecond, 1, true}, {500 * time.Millisecond, 1, false}, {10 * time.Second, 3, true}}},
		{name: "more than the burst never passes", rate: 100, burst: 5, takes: []struct {
			at   time.Duration
			n    float64
			want bool
		}{{0, 6, false}, {time.Hour, 6, false}, {time.Hour, 5, true}}},
		{name: "a refused take takes nothing", rate: 1, burst: 10, takes: []struct {
			at   time.Duration
			n    float64
			want bool
		}{{0, 8, true}, {0, 3, false}, {0, 2, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBucket(tt.rate, tt.burst)
			for i, tk := range tt.takes {
				if got := b.Take(t0.Add(tk.at), tk.n); got != tk.want {
					t.Fatalf("take %d (%v at +%s) = %v, want %v", i, tk.n, tk.at, got, tk.want)
				}
			}
		})
	}
}

func TestInboundLimitsMessagesAndBytesPerKey(t *testing.T) {
	in := NewInbound(InboundLimits{MessagesPerSecond: 10, MessageBurst: 5, BytesPerSecond: 1000, ByteBurst: 3000})
	passed := 0
	for i := 0; i < 100; i++ {
		if in.Allow("flood", 10, t0) {
			passed++
		}
	}
	if passed != 5 {
		t.Fatalf("messages passed in one instant = %d, want the burst 5", passed)
	}
	if !in.Allow("other", 10, t0) {
		t.Fatal("another key is limited by the first one's flood")
	}
	// One second later: 10 more message tokens, but bytes bound them.
	passed = 0
	for i := 0; i < 10; i++ {
		if in.Allow("bytes", 1000, t0.Add(time.Second)) {
			passed++
		}
	}
	if passed != 3 {
		t.Fatalf("1000-byte messages passed = %d, want 3 (byte burst 3000)", passed)
	}
	if in.Allow("bytes", 1, t0.Add(time.Second)) {
		t.Fatal("a message passed with no byte tokens left")
	}
	if !in.Allow("bytes", 1000, t0.Add(2*time.Second)) {
		t.Fatal("byte tokens did not refill")
	}
	total, by := in.Dropped()
	if total != 95+7+1 || by["flood"] != 95 || by["bytes"] != 8 {
		t.Fatalf("dropped = %d %v", total, by)
	}
}

func TestInboundUnlimited(t *testing.T) {
	in := NewInbound(InboundLimits{MessagesPerSecond: -1, BytesPerSecond: -1})
	for i := 0; i < 10000; i++ {
		if !in.Allow("a", 1<<20, t0) {
			t.Fatalf("message %d refused with both limits off", i)
		}
	}
}

func TestInboundBoundsItsKeys(t *testing.T) {
	in := NewInbound(InboundLimits{})
	for i := 0; i < DefaultMaxKeys; i++ {
		if !in.Allow(fmt.Sprint(i), 1, t0) {
			t.Fatalf("key %d refused", i)
		}
	}
	if in.Allow("one-too-many", 1, t0) {
		t.Fatal("a key beyond DefaultMaxKeys was tracked while all others are busy")
	}
	if !in.Allow("later", 1, t0.Add(time.Minute)) {
		t.Fatal("idle keys were not forgotten")
	}
	if len(in.keys) > DefaultMaxKeys {
		t.Fatalf("%d keys tracked", len(in.keys))
	}
}

func TestWindow(t *testing.T) {
	w := NewWindow(2, 10*time.Second)
	steps := []struct {
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{0, true, 0}, {time.Second, true, 0}, {2 * time.Second, false, 0}, {3 * time.Second, false, 0},
		{10 * time.Second, true, 2}, {11 * time.Second, true, 0}, {12 * time.Second, false, 0},
		{25 * time.Second, true, 1},
	}
	for i, s := range steps {
		sup, ok := w.Allow(t0.Add(s.at))
		if ok != s.ok || sup != s.suppressed {
			t.Fatalf("step %d at +%s: (%d, %v), want (%d, %v)", i, s.at, sup, ok, s.suppressed, s.ok)
		}
	}
	if w.Refused() != 3 {
		t.Fatalf("Refused = %d, want 3", w.Refused())
	}
}

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
