package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestOutboxKeepsOrderAndItsBound(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t, Options{})
	var dropped int64
	for i := range 5 {
		d, err := s.Enqueue(ctx, "evoclaw/agents/pi/reports", []byte(fmt.Sprintf("r%d", i)), OutboxBound{Len: 3})
		if err != nil {
			t.Fatal(err)
		}
		dropped += d
	}
	if dropped != 2 {
		t.Fatalf("dropped %d, want the 2 oldest", dropped)
	}
	items, err := s.Outbox(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := payloads(items); got != "r2,r3,r4" {
		t.Fatalf("outbox %s, want the newest three oldest first", got)
	}
	if err := s.Dequeue(ctx, items[0].ID); err != nil {
		t.Fatal(err)
	}
	// What is waiting survives a restart of the agent.
	s2 := reopen(t, s, path, Options{})
	if n, err := s2.OutboxLen(ctx); err != nil || n != 2 {
		t.Fatalf("outbox length %d %v after reopen, want 2", n, err)
	}
	items, err = s2.Outbox(ctx, 1)
	if err != nil || payloads(items) != "r3" || items[0].Topic != "evoclaw/agents/pi/reports" {
		t.Fatalf("oldest after reopen %+v %v", items, err)
	}
	if _, err := s2.Enqueue(ctx, "", []byte("x"), OutboxBound{}); err == nil {
		t.Fatal("a message without a topic was kept")
	}
}

func payloads(items []OutboxItem) string {
	s := ""
	for i, it := range items {
		if i > 0 {
			s += ","
		}
		s += string(it.Payload)
	}
	return s
}

// TestOutboxBytesAreBounded: the outbox keeps at most Bytes of payload,
// dropping the oldest, and always the newest message. Before, only the
// count was bounded: 10,000 reports of up to 256 KiB each could take 2.6 GB
// of a device's disk.
func TestOutboxBytesAreBounded(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	for _, tt := range []struct {
		size        int
		wantDropped int64
		want        string // payload sizes kept, oldest first
	}{
		{40, 0, "40"},
		{40, 0, "40,40"},
		{30, 1, "40,30"},
		{10, 0, "40,30,10"},
		{150, 3, "150"}, // over the bound alone: kept, the rest dropped
		{1, 1, "1"},
	} {
		d, err := s.Enqueue(ctx, "evoclaw/agents/pi/reports", make([]byte, tt.size), OutboxBound{Len: 10, Bytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		items, err := s.Outbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []string
		for _, it := range items {
			sizes = append(sizes, fmt.Sprint(len(it.Payload)))
		}
		if got := strings.Join(sizes, ","); d != tt.wantDropped || got != tt.want {
			t.Fatalf("after %d bytes: dropped %d, kept %s; want %d, %s", tt.size, d, got, tt.wantDropped, tt.want)
		}
	}
}
