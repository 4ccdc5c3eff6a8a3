package tiers

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestBudgetAlarm drives the budget with a fake size and clock: over the
// limit the flag is up and one ERROR line is written per 10 minutes however
// often it is checked; back under, the flag drops.
func TestBudgetAlarm(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	b := newBudget("audit.db", 1, slog.New(slog.NewTextHandler(&logs, nil)))
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	var size int64
	var sizeErr error
	b.now = func() time.Time { return now }
	b.size = func(string) (int64, error) { return size, sizeErr }
	steps := []struct {
		name     string
		size     int64
		err      error
		advance  time.Duration
		checks   int
		wantOver bool
		wantErrs int // ERROR lines so far
	}{
		{"under", 1 << 19, nil, 0, 1, false, 0},
		{"over, checked often", 2 << 20, nil, time.Second, 100, true, 1},
		{"still over 10 minutes later", 2 << 20, nil, budgetAlarmEvery, 1, true, 2},
		{"measurement fails: keep the last answer", 0, errors.New("disk gone"), time.Second, 1, true, 2},
		{"back under", 1 << 10, nil, time.Second, 1, false, 2},
	}
	for _, s := range steps {
		size, sizeErr = s.size, s.err
		now = now.Add(s.advance)
		for range s.checks {
			b.check()
		}
		st := b.snapshot()
		if st.Over != s.wantOver {
			t.Fatalf("%s: over %v, want %v (%+v)", s.name, st.Over, s.wantOver, st)
		}
		if n := strings.Count(logs.String(), "level=ERROR"); n != s.wantErrs {
			t.Fatalf("%s: %d ERROR lines, want %d:\n%s", s.name, n, s.wantErrs, logs.String())
		}
		if (s.err != nil) != (st.LastError != "") {
			t.Fatalf("%s: last error %q", s.name, st.LastError)
		}
	}
	if !strings.Contains(logs.String(), "back within its disk budget") {
		t.Fatalf("no line when back under:\n%s", logs.String())
	}
}

// TestOverBudgetOnARealStore: a node whose audit database outgrows a 1 MiB
// budget says so through OverBudget and Status; negative means no budget.
func TestOverBudgetOnARealStore(t *testing.T) {
	t.Parallel()
	for _, mb := range []int{1, -1} {
		tr, err := Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{}, Config{DiskBudgetMB: mb}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if over, _ := tr.OverBudget(); over {
			t.Fatal("an empty database is over budget")
		}
		detail := []byte(`{"x":"` + strings.Repeat("y", 4000) + `"}`)
		for range 400 {
			if err := tr.Warm.RecordEvent(context.Background(), persistence.Event{Node: "n", Kind: "late_result", Detail: detail}); err != nil {
				t.Fatal(err)
			}
		}
		tr.budget.check() // the ticker would, within DefaultBudgetInterval
		over, why := tr.OverBudget()
		if want := mb > 0; over != want || want != strings.Contains(why, "over its disk budget of 1 MiB") {
			t.Fatalf("budget %d MiB: OverBudget() = %v %q, status %+v", mb, over, why, tr.Status().Budget)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
