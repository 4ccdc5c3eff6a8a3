package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestConversationSummary: Conversation reads a conversation's summary
// row: not found is ok=false without an error, the times and count are
// those of the messages appended, and a row whose time no longer parses
// is an error naming the conversation, not a zero time.
func TestConversationSummary(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t, Options{})
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 800, time.FixedZone("X", 3600))
	m1, m2, m3 := msg("user", "a"), msg("assistant", "b"), msg("user", "c")
	m1.Time, m2.Time, m3.Time = t0, t0.Add(time.Second), t0.Add(time.Minute)
	if err := s.AppendMessages(ctx, "c1", []persistence.Message{m1, m2}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(ctx, "c1", []persistence.Message{m3}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(ctx, "c2", []persistence.Message{msg("user", "x")}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		id          string
		ok          bool
		first, last time.Time
		count       int64
	}{
		{"c1", true, m1.Time, m3.Time, 3},
		{"nobody", false, time.Time{}, time.Time{}, 0},
		{"", false, time.Time{}, time.Time{}, 0},
	} {
		c, ok, err := s.Conversation(ctx, tc.id)
		if err != nil || ok != tc.ok {
			t.Fatalf("Conversation(%q) = ok %v, err %v; want ok %v", tc.id, ok, err, tc.ok)
		}
		if !ok {
			continue
		}
		if c.ID != tc.id || !c.FirstTime.Equal(tc.first) || !c.LastTime.Equal(tc.last) || c.MessageCount != tc.count {
			t.Errorf("Conversation(%q) = %+v, want first %v, last %v, count %d", tc.id, c, tc.first, tc.last, tc.count)
		}
		if c.FirstTime.Location() != time.UTC {
			t.Errorf("first time in %v, want UTC", c.FirstTime.Location())
		}
	}

	tamper(t, path, "UPDATE conversations SET last_ts = 'yesterday' WHERE conversation_id = 'c2'")
	if _, ok, err := s.Conversation(ctx, "c2"); err == nil || ok || !strings.Contains(err.Error(), `"c2"`) || !strings.Contains(err.Error(), "last_ts") {
		t.Fatalf("Conversation of a corrupt row: ok %v, err %v; want an error naming c2 and last_ts", ok, err)
	}
	if _, ok, err := s.Conversation(ctx, "c1"); err != nil || !ok {
		t.Fatalf("Conversation(c1) after c2's corruption: ok %v, err %v", ok, err)
	}
}
