package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// fullStore is a real store whose job runs cannot be recorded while full
// is set, as on a full disk.
type fullStore struct {
	*sqlite.Store
	full  atomic.Bool
	tries atomic.Int64
}

func (f *fullStore) RecordJobRuns(ctx context.Context, jobID string, watermark time.Time, runs []persistence.JobRun) ([]bool, error) {
	if f.full.Load() {
		f.tries.Add(1)
		return nil, fmt.Errorf("record runs of job %q: %w", jobID, sqlite.ErrDiskFull)
	}
	return f.Store.RecordJobRuns(ctx, jobID, watermark, runs)
}

// TestFailingTicksLogBounded: a due run that cannot be recorded fails
// every tick; the loop logs the failure once (again only after
// tickLogRepeat), and one line when ticks work again. Each failing tick
// logged a line: one a second for each due job while the disk was full.
func TestFailingTicksLogBounded(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	store := &fullStore{Store: st}
	store.full.Store(true)
	start := time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)
	clock := testenv.NewClock(start)
	var logs testenv.Buffer
	var ran atomic.Int64
	s, err := New(Options{Store: store, Node: "n1", Clock: clock, Poll: 2 * time.Millisecond, Logger: logs.Logger(slog.LevelInfo),
		Runner: func(context.Context, Run) Result { ran.Add(1); return Result{} }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(context.Background(), []Spec{{ID: "meter", Schedule: "@every 1m", Prompt: "read the meter"}}); err != nil {
		t.Fatal(err)
	}
	clock.Set(start.Add(90 * time.Second)) // one run due
	s.Start()
	t.Cleanup(s.Stop)
	const failing = 50
	testenv.Eventually(t, 10*time.Second, func() bool { return store.tries.Load() >= failing }, "ticks fail")
	if n := strings.Count(logs.String(), `msg="scheduler tick"`); n != 1 {
		t.Fatalf("%d failing ticks logged %d lines, want 1 (within %s):\n%s", store.tries.Load(), n, tickLogRepeat, logs.String())
	}
	if !strings.Contains(logs.String(), "audit database disk is full") {
		t.Fatalf("the line does not say why:\n%s", logs.String())
	}
	store.full.Store(false)
	testenv.Eventually(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "scheduler tick: working again") }, "recovery logged")
	testenv.Eventually(t, 10*time.Second, func() bool { s.Wait(); return ran.Load() == 1 }, "the due run starts once space is back")
}

// TestTickFailuresRepeat: a failure that persists is logged again after
// tickLogRepeat with the count of those left out; another failure is
// logged at once.
func TestTickFailuresRepeat(t *testing.T) {
	var logs testenv.Buffer
	log := logs.Logger(slog.LevelInfo)
	var f tickFailures
	now := time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)
	full := fmt.Errorf("job %q: %w", "meter", sqlite.ErrDiskFull)
	for i := range 10 {
		f.log(log, full, now.Add(time.Duration(i)*time.Second))
	}
	f.log(log, full, now.Add(tickLogRepeat))
	f.log(log, fmt.Errorf("job %q: another failure", "meter"), now.Add(tickLogRepeat+time.Second))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), logs.String())
	}
	for i, want := range []string{"repeats=0", "repeats=9", "another failure"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant %s", i, lines[i], want)
		}
	}
}
