package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// A queued event commits without lingering for company, before every
// write submitted after it, and reports its result to then.
func TestQueueEvent(t *testing.T) {
	tests := []struct {
		name   string
		before bool // a queued record lingers when the event comes
		after  bool // a waited write follows at once
	}{
		{"alone", false, false},
		{"before a waited write", false, true},
		{"behind a lingering record", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An hour's linger: a queued write that lingered would not
			// commit within the test's time.
			s, path := openStore(t, Options{Linger: time.Hour})
			if tt.before {
				if err := s.QueueLLMCall(sampleLLMCall(1), nil); err != nil {
					t.Fatal(err)
				}
			}
			got := make(chan error, 1)
			if err := s.QueueEvent(persistence.Event{Node: "n", Kind: persistence.EventNodeStart}, func(err error) { got <- err }); err != nil {
				t.Fatal(err)
			}
			if tt.after {
				if err := s.RecordEvent(context.Background(), persistence.Event{Node: "n", Kind: persistence.EventJobChanged}); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("queued event: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the queued event did not commit: it lingered")
			}
			if first := queryOne(t, path, "SELECT kind FROM events ORDER BY chain_seq LIMIT 1"); first != persistence.EventNodeStart {
				t.Errorf("first event = %v, want %s", first, persistence.EventNodeStart)
			}
			if tt.before {
				if n := queryOne(t, path, "SELECT count(*) FROM llm_calls"); n != int64(1) {
					t.Errorf("llm_calls = %v, want the lingering record committed with the event", n)
				}
			}
			want := map[bool]int64{false: 1, true: 2}[tt.after]
			if n := queryOne(t, path, "SELECT count(*) FROM events"); n != want {
				t.Errorf("events = %v, want %d", n, want)
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		s, _ := openStore(t, Options{})
		if err := s.QueueEvent(persistence.Event{Node: "n"}, nil); err == nil {
			t.Error("an event without a kind was queued")
		}
	})
}
