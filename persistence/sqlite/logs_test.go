package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/hot"
)

// The ring sees exactly the committed records, in chain order, and the
// database path gives the same entries.
func TestRingFedOnCommit(t *testing.T) {
	ring := hot.NewRing(100)
	fail := false
	s, path := openStoreWithCommit(t, Options{Ring: ring}, func(commit func() error, n int) error {
		if fail {
			return errors.New("injected commit failure")
		}
		return commit()
	})
	fillMixed(t, s, 2) // 10 records
	fail = true
	if err := s.RecordToolCall(context.Background(), sampleCall(7)); err == nil {
		t.Fatal("commit failure not reported")
	}
	fail = false
	got := ring.After(0, hot.Filter{}, 0)
	if len(got) != 10 {
		t.Fatalf("ring holds %d entries, want the 10 committed", len(got))
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
	fromDB, head, err := RecentEntries(context.Background(), path, hot.Filter{}, 0)
	if err != nil || head != 10 || len(fromDB) != 10 {
		t.Fatalf("RecentEntries: %d entries, head %d, %v", len(fromDB), head, err)
	}
	for i := range got {
		if got[i].String() != fromDB[i].String() {
			t.Errorf("entry %d differs:\n ring %s\n db   %s", i, got[i], fromDB[i])
		}
	}
	tools := ring.After(0, hot.Filter{Kind: hot.KindTool}, 0)
	if len(tools) != 2 || !strings.Contains(tools[0].String(), "tool    node=edge-1 agent=edge-1") || !strings.Contains(tools[0].String(), "shell success") {
		t.Fatalf("tool entries %v", tools)
	}
}

func TestRecentEntriesAndEntriesAfter(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	fillMixed(t, s, 3) // 15 records: 3 tool calls
	got, head, err := RecentEntries(context.Background(), path, hot.Filter{Kind: hot.KindTool}, 2)
	if err != nil || head != 15 || len(got) != 2 || got[0].Seq != 6 || got[1].Seq != 11 {
		t.Fatalf("last 2 tool calls: %+v head %d %v", got, head, err)
	}
	if got, _, _ := RecentEntries(context.Background(), path, hot.Filter{AgentID: "nobody"}, 5); len(got) != 0 {
		t.Fatalf("unknown agent: %v", got)
	}
	fillMixed(t, s, 1)
	after, newHead, err := EntriesAfter(context.Background(), path, head, hot.Filter{})
	if err != nil || newHead != 20 || len(after) != 5 || after[0].Seq != 16 {
		t.Fatalf("after %d: %d entries, head %d, %v", head, len(after), newHead, err)
	}
}
