package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
)

// writeAged writes one tool call per time in ts and returns their chain
// positions' count.
func writeAged(t *testing.T, s *Store, ts ...time.Time) {
	t.Helper()
	for i, at := range ts {
		c := sampleCall(i)
		c.Time = at
		if err := s.RecordToolCall(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPrune(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	old, recent := now.Add(-10*24*time.Hour), now.Add(-time.Hour)
	tests := []struct {
		name      string
		policy    Retention
		shipped   int64
		wantUpTo  int64 // 0: nothing deleted
		wantCount int64 // tool_calls left
	}{
		{"cold tier, nothing shipped", Retention{ColdTier: true}, 0, 0, 6},
		{"cold tier, two shipped", Retention{ColdTier: true}, 2, 2, 4},
		{"cold tier, all shipped: only the old ones", Retention{ColdTier: true}, 6, 4, 2},
		{"cold tier, shorter window", Retention{ColdTier: true, WarmWindow: 30 * time.Minute}, 6, 6, 0},
		{"no cold tier, no budget", Retention{}, 0, 0, 6},
		{"no cold tier, max age", Retention{MaxAge: 24 * time.Hour}, 0, 4, 2},
		{"no cold tier, batch of 3", Retention{MaxAge: 24 * time.Hour, Batch: 3}, 0, 3, 3},
		{"no cold tier, tiny size budget", Retention{MaxBytes: 1}, 0, 1, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := openStore(t, Options{})
			writeAged(t, s, old, old, old, old, recent, recent)
			if tt.shipped > 0 {
				if err := s.MarkShipped(context.Background(), tt.shipped); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Prune(context.Background(), tt.policy, now)
			if err != nil {
				t.Fatal(err)
			}
			if res.UpToSeq != tt.wantUpTo || res.Deleted != tt.wantUpTo || (tt.wantUpTo > 0) != (res.Reason != "") {
				t.Fatalf("prune %+v, want up to %d", res, tt.wantUpTo)
			}
			if n := countRows(t, path); n != tt.wantCount {
				t.Fatalf("%d rows left, want %d", n, tt.wantCount)
			}
			rep, err := VerifyChain(context.Background(), path)
			if err != nil {
				t.Fatalf("chain after prune: %v", err)
			}
			if rep.StartSeq != tt.wantUpTo || rep.Verified != 6-tt.wantUpTo {
				t.Fatalf("verify after prune: %+v", rep)
			}
		})
	}
}

// After every record is pruned, new records chain to the checkpoint, also
// across a reopen; deleting the checkpoint is detected.
func TestPruneEverythingThenContinue(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	now := time.Now()
	writeAged(t, s, now.Add(-48*time.Hour), now.Add(-47*time.Hour))
	if res, err := s.Prune(context.Background(), Retention{MaxAge: time.Hour}, now); err != nil || res.UpToSeq != 2 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	writeAged(t, s, now)
	s2 := reopen(t, s, path, Options{})
	if err := s2.RecordEvent(context.Background(), persistence.Event{Node: "n", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	rep, err := VerifyChain(context.Background(), path)
	if err != nil || rep.StartSeq != 2 || rep.Verified != 2 || rep.HeadSeq != 4 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	tamper(t, path, "DELETE FROM chain_checkpoints")
	if _, err := VerifyChain(context.Background(), path); err == nil {
		t.Fatal("deleting the checkpoint went unnoticed")
	}
}

func TestPruneRejectsNegative(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	if _, err := s.Prune(context.Background(), Retention{MaxAge: -time.Hour}, time.Now()); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("got %v", err)
	}
}

func TestRetainer(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	writeAged(t, s, base.Add(-3*time.Hour), base.Add(-2*time.Hour), base)
	clock := func() time.Time { return base }
	r := NewRetainer(s, Retention{MaxAge: time.Hour, Batch: 1}, time.Hour, clock, nil)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); !errors.Is(err, ErrRetainerStarted) {
		t.Fatalf("second Start: %v", err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return !r.Status().LastRun.IsZero() }, "the first prune pass")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Close() // idempotent
	st := r.Status()
	if st.LastDeleted != 2 || st.ChainStart != 2 || st.LastError != "" || st.LastReason != "older than max age" {
		t.Fatalf("status %+v", st)
	}
	if n := countRows(t, path); n != 1 {
		t.Fatalf("%d rows left, want 1", n)
	}
}

// TestPruneOldEventsByDefault: without a cold tier or a budget, events
// older than the event max age go while they are the oldest records; the
// first tool call stops the deletion (a tool call is deleted only once
// shipped, or by a budget the operator set), and the chain still verifies.
func TestPruneOldEventsByDefault(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	old, recent := now.Add(-(DefaultEventMaxAge + time.Hour)), now.Add(-time.Hour)
	tests := []struct {
		name       string
		policy     Retention
		records    string // e: old event, E: recent event, t: old tool call
		wantUpTo   int64
		wantEvents int64
		wantCalls  int64
	}{
		{"old events before a tool call", Retention{}, "eeeteeE", 3, 3, 1},
		{"only events", Retention{}, "eeeeE", 4, 1, 0},
		{"a tool call first", Retention{}, "teeeE", 0, 4, 1},
		{"turned off", Retention{EventMaxAge: -1}, "eeeteeE", 0, 6, 1},
		{"max age still takes tool calls", Retention{MaxAge: 24 * time.Hour}, "eeeteeE", 6, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := openStore(t, Options{})
			ctx := context.Background()
			for i, c := range tt.records {
				var err error
				switch c {
				case 'e', 'E':
					at := old
					if c == 'E' {
						at = recent
					}
					err = s.RecordEvent(ctx, persistence.Event{Time: at, Node: "n", AgentID: "pi-flood", Kind: "late_result"})
				case 't':
					call := sampleCall(i)
					call.Time = old
					err = s.RecordToolCall(ctx, call)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Prune(ctx, tt.policy, now)
			if err != nil {
				t.Fatal(err)
			}
			if res.UpToSeq != tt.wantUpTo {
				t.Fatalf("prune %+v, want up to %d", res, tt.wantUpTo)
			}
			if tt.wantUpTo > 0 && tt.policy.MaxAge == 0 && res.Reason != ReasonOldEvents {
				t.Fatalf("reason %q", res.Reason)
			}
			if n := countTable(t, path, "events"); n != tt.wantEvents {
				t.Errorf("%d events left, want %d", n, tt.wantEvents)
			}
			if n := countTable(t, path, "tool_calls"); n != tt.wantCalls {
				t.Errorf("%d tool calls left, want %d", n, tt.wantCalls)
			}
			if _, err := VerifyChain(ctx, path); err != nil {
				t.Fatalf("verify after pruning: %v", err)
			}
		})
	}
}

func countTable(t testing.TB, path, table string) int64 {
	t.Helper()
	n, ok := queryOne(t, path, "SELECT count(*) FROM "+table).(int64)
	if !ok {
		t.Fatal("count(*) is not an integer")
	}
	return n
}

// TestPruneDeletesEmptiedConversations: a conversation whose every message
// retention deleted loses its summary row in the same prune, one that
// keeps a message keeps its row, and a row emptied before this existed is
// swept by a later prune. Before, every conversation ever held kept its
// row for ever (one per stateless API request).
func TestPruneDeletesEmptiedConversations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	old, recent := now.Add(-48*time.Hour), now.Add(-time.Minute)
	s, path := openStore(t, Options{})
	appendAt := func(s *Store, conv string, at ...time.Time) {
		t.Helper()
		for _, ts := range at {
			m := msg("user", conv)
			m.Time = ts
			if err := s.AppendMessages(ctx, conv, []persistence.Message{m}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendAt(s, "gone", old, old)
	appendAt(s, "half", old, recent)
	appendAt(s, "new", recent)
	convs := func() string {
		t.Helper()
		v, _ := queryOne(t, path, `SELECT coalesce(group_concat(conversation_id || ':' || message_count, ','), '')
			FROM (SELECT * FROM conversations ORDER BY conversation_id)`).(string)
		return v
	}
	if got, want := convs(), "gone:2,half:2,new:1"; got != want {
		t.Fatalf("before the prune: %s, want %s", got, want)
	}
	if res, err := s.Prune(ctx, Retention{MaxAge: time.Hour}, now); err != nil || res.Deleted != 3 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	if got, want := convs(), "half:2,new:1"; got != want {
		t.Fatalf("after the prune: %s, want %s", got, want)
	}
	// A conversation that continues starts again, with what it adds alone.
	appendAt(s, "gone", now)
	if got, want := convs(), "gone:1,half:2,new:1"; got != want {
		t.Fatalf("continued: %s, want %s", got, want)
	}
	// A row left empty by an earlier version goes at the next prune that
	// deletes anything.
	s.Close()
	tamper(t, path, `INSERT INTO conversations VALUES ('left', ?, ?, ?, ?, 3)`,
		old.UTC().Format(tsLayout), old.UnixMilli(), old.UTC().Format(tsLayout), old.UnixMilli())
	s = reopen(t, s, path, Options{})
	defer s.Close()
	if got, want := convs(), "gone:1,half:2,left:3,new:1"; got != want {
		t.Fatalf("with a leftover row: %s, want %s", got, want)
	}
	// The chain now holds half's and new's recent messages, then gone's
	// newest: a prune half a minute later deletes the first two only.
	if res, err := s.Prune(ctx, Retention{MaxAge: time.Minute}, now.Add(30*time.Second)); err != nil || res.Deleted != 2 {
		t.Fatalf("second prune: %+v %v", res, err)
	}
	if got, want := convs(), "gone:1"; got != want {
		t.Fatalf("after the second prune: %s, want %s", got, want)
	}
	if rep, err := VerifyChain(ctx, path); err != nil || rep.Verified != rep.HeadSeq-rep.StartSeq {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
