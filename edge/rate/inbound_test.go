package rate

import (
	"fmt"
	"testing"
	"time"
)

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
	if len(in.keys.m) > DefaultMaxKeys {
		t.Fatalf("%d keys tracked", len(in.keys.m))
	}
}

// A limit that is off must not keep a key from being forgotten: its bucket
// is never taken from and stays full, however much time passes.
func TestInboundForgetsKeysWithOneLimitOff(t *testing.T) {
	in := NewInbound(InboundLimits{MessagesPerSecond: -1, BytesPerSecond: 1000, ByteBurst: 1000})
	for i := 0; i < DefaultMaxKeys; i++ {
		if !in.Allow(fmt.Sprint(i), 10, t0) {
			t.Fatalf("key %d refused", i)
		}
	}
	if in.Allow("busy", 10, t0) {
		t.Fatal("a key beyond DefaultMaxKeys was tracked while all others are busy")
	}
	if !in.Allow("later", 10, t0.Add(time.Hour)) {
		t.Fatal("keys idle for an hour were not forgotten")
	}
}
