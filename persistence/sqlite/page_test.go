package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestConversationsPage walks every page of conversations sharing and not
// sharing a last activity time: each appears once, in order.
func TestConversationsPage(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("c%d", i)
		// c0 and c1 share a time, as do c2 and c3: ties break by id.
		at := base.Add(time.Duration(10-i/2) * time.Minute)
		m := persistence.Message{Role: "user", Body: []byte(`{"role":"user","content":"hi"}`), Time: at}
		if err := s.AppendMessages(ctx, id, []persistence.Message{m}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	for _, limit := range []int{1, 2, 3, 7, 8} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			var got []string
			cur := ConversationCursor{}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("pages never end")
				}
				page, next, err := s.ConversationsPage(ctx, cur, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit {
					t.Fatalf("page of %d, limit %d", len(page), limit)
				}
				for _, c := range page {
					got = append(got, c.ID)
				}
				if next == nil {
					break
				}
				cur = *next
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
	if _, _, err := s.ConversationsPage(ctx, ConversationCursor{}, 0); err == nil {
		t.Fatal("limit 0 accepted")
	}
}

func TestRecentMessages(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	add := func(conv string, n int) {
		t.Helper()
		var ms []persistence.Message
		for i := range n {
			ms = append(ms, persistence.Message{Role: "user", Body: fmt.Appendf(nil, `{"role":"user","content":"m%d"}`, i)})
		}
		if err := s.AppendMessages(ctx, conv, ms); err != nil {
			t.Fatal(err)
		}
	}
	add("conv", 5)
	add("long", RecentPrepared+10)
	// seqs lo..hi as a string.
	span := func(lo, hi int) string {
		var seqs []int
		for i := lo; i <= hi; i++ {
			seqs = append(seqs, i)
		}
		return fmt.Sprint(seqs)
	}
	for _, tc := range []struct {
		conv  string
		limit int
		want  string
	}{
		{"conv", 2, "[4 5]"}, {"conv", 5, "[1 2 3 4 5]"}, {"conv", 9, "[1 2 3 4 5]"},
		{"conv", RecentPrepared, "[1 2 3 4 5]"}, // the prepared statement
		{"long", RecentPrepared, span(11, RecentPrepared+10)},
		{"long", RecentPrepared - 1, span(12, RecentPrepared+10)},
		{"long", RecentPrepared + 1, span(10, RecentPrepared+10)},
	} {
		got, err := s.RecentMessages(ctx, tc.conv, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, m := range got {
			seqs = append(seqs, m.Seq)
		}
		if fmt.Sprint(seqs) != tc.want {
			t.Errorf("%s, limit %d: seqs %v, want %s", tc.conv, tc.limit, seqs, tc.want)
		}
	}
	if got, err := s.RecentMessages(ctx, "nobody", 3); err != nil || len(got) != 0 {
		t.Fatalf("unknown conversation: %v, %v", got, err)
	}
}

// TestQueryLimited: the bounds cut a result instead of failing it, and a
// write is refused as by QueryReadOnly.
func TestQueryLimited(t *testing.T) {
	s, path := openStore(t, Options{})
	ctx := context.Background()
	for i := range 10 {
		if err := s.RecordToolCall(ctx, sampleCall(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		lim       Limits
		rows      int
		truncated bool
	}{
		{"unbounded", Limits{}, 10, false},
		{"rows", Limits{Rows: 3}, 3, true},
		{"exact rows", Limits{Rows: 10}, 10, false},
		{"bytes", Limits{Bytes: 20}, 2, true}, // 8 per integer, one column
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := QueryLimited(ctx, path, tc.lim, `SELECT id FROM tool_calls ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != tc.rows || res.Truncated != tc.truncated {
				t.Fatalf("%d rows, truncated %v; want %d, %v", len(res.Rows), res.Truncated, tc.rows, tc.truncated)
			}
		})
	}
	if _, err := QueryLimited(ctx, path, Limits{Rows: 5}, `DELETE FROM tool_calls`); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete: %v, want ErrReadOnly", err)
	}
}
