package jobs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// harness is one scheduler over a real SQLite store, with a runner that
// records its runs.
type harness struct {
	t     *testing.T
	path  string
	store *sqlite.Store
	clock *testenv.Clock
	s     *Scheduler

	mu   sync.Mutex // guards runs
	runs []Run
	// run, when set, decides a run's result.
	run   func(ctx context.Context, r Run) Result
	ready func(ctx context.Context, agent string) error
	// node names the scheduler's node (default n1); claim is its
	// Options.Claim.
	node  string
	claim func(ctx context.Context, job, agent string, at time.Time, window time.Duration) (bool, error)
	// shared is its Options.Shared.
	shared SharedStore
}

func newHarness(t *testing.T, now time.Time) *harness {
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "audit.db"), clock: testenv.NewClock(now)}
	h.openStore()
	t.Cleanup(func() { h.close() })
	return h
}

func (h *harness) openStore() {
	st, err := sqlite.Open(h.path, sqlite.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.store = st
}

// start opens a scheduler (a node starting) with config jobs.
func (h *harness) start(config ...Spec) {
	h.t.Helper()
	node := h.node
	if node == "" {
		node = "n1"
	}
	s, err := New(Options{Store: h.store, Node: node, Clock: h.clock, Events: h.store, Claim: h.claim, Shared: h.shared,
		Runner: func(ctx context.Context, r Run) Result {
			h.mu.Lock()
			h.runs = append(h.runs, r)
			run := h.run
			h.mu.Unlock()
			if run != nil {
				return run(ctx, r)
			}
			return Result{Calls: 1}
		},
		Ready: func(ctx context.Context, agent string) error {
			if h.ready != nil {
				return h.ready(ctx, agent)
			}
			return nil
		}})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := s.Open(context.Background(), config); err != nil {
		h.t.Fatal(err)
	}
	h.s = s
}

// restart stops the scheduler and the store and opens both again: a node
// restart on the same data directory.
func (h *harness) restart(config ...Spec) {
	h.close()
	h.openStore()
	h.start(config...)
}

func (h *harness) close() {
	if h.s != nil {
		h.s.Stop()
		h.s = nil
	}
	if h.store != nil {
		if err := h.store.Close(); err != nil {
			h.t.Error(err)
		}
		h.store = nil
	}
}

// tick moves the clock to at, ticks and waits for the runs it started.
func (h *harness) tick(at time.Time) {
	h.t.Helper()
	h.clock.Set(at)
	if err := h.s.Tick(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.s.Wait()
}

func (h *harness) started() []Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Run(nil), h.runs...)
}

// outcomes returns the job's recorded runs, oldest first, as
// "instant agent outcome trigger".
func (h *harness) outcomes(job string) []string {
	h.t.Helper()
	runs, err := h.store.JobRuns(context.Background(), job, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		out = append(out, fmt.Sprintf("%s %s %s %s", r.Scheduled.UTC().Format("01-02T15:04"), r.AgentID, r.Outcome, r.Trigger))
	}
	return out
}

func (h *harness) count(q string) int64 {
	h.t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), h.path, q)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.Rows[0][0].(int64)
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

var morning = Spec{ID: "morning", Schedule: "CRON_TZ=UTC 0 6 * * *", Prompt: "check the pump", Agents: []string{"pi-1"}}

// A node killed before 06:00 and back at 06:20 catches the run up, once:
// more ticks and another restart do not run it again.
func TestRestartAcrossInstantCatchesUpOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	h.start(morning)
	h.tick(t6.Add(-time.Minute))
	h.clock.Set(t6.Add(20 * time.Minute))
	h.restart(morning)
	h.tick(t6.Add(20 * time.Minute))
	h.tick(t6.Add(21 * time.Minute))
	h.restart(morning)
	h.tick(t6.Add(22 * time.Minute))
	equal(t, "runs", h.outcomes("morning"), []string{"03-02T06:00 pi-1 succeeded catch_up"})
	if n := len(h.started()); n != 1 {
		t.Fatalf("%d conversations", n)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE kind = 'job_run' AND json_extract(detail, '$.outcome') = 'succeeded'`); n != 1 {
		t.Fatalf("%d job_run events", n)
	}
}

// With missed = "skip" the same restart records the instant as missed,
// once.
func TestRestartAcrossInstantRecordsMissedOnce(t *testing.T) {
	t.Parallel()
	job := morning
	job.Missed = MissedSkip
	h := newHarness(t, t6.Add(-time.Hour))
	h.start(job)
	h.clock.Set(t6.Add(20 * time.Minute))
	h.restart(job)
	h.tick(t6.Add(20 * time.Minute))
	h.restart(job)
	h.tick(t6.Add(30 * time.Minute))
	equal(t, "runs", h.outcomes("morning"), []string{"03-02T06:00 pi-1 missed catch_up"})
	if n := len(h.started()); n != 0 {
		t.Fatalf("%d conversations for a missed run", n)
	}
}

// A node killed during a run: the claimed run is ended as failed
// (interrupted) at the next start and never run again.
func TestKilledDuringRunIsNotRerun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	h.start(morning)
	// What a node killed after its claim leaves: a run without outcome.
	claimed, err := h.store.RecordJobRuns(context.Background(), "morning", t6, []persistence.JobRun{{JobID: "morning",
		Scheduled: t6, AgentID: "pi-1", Trigger: persistence.TriggerSchedule, Started: t6, Node: "n1"}})
	if err != nil || !claimed[0] {
		t.Fatal(claimed, err)
	}
	h.clock.Set(t6.Add(5 * time.Minute))
	h.restart(morning)
	h.tick(t6.Add(5 * time.Minute))
	equal(t, "runs", h.outcomes("morning"), []string{"03-02T06:00 pi-1 failed schedule"})
	if n := len(h.started()); n != 0 {
		t.Fatalf("the interrupted run ran again")
	}
	runs, _ := h.store.JobRuns(context.Background(), "morning", 1)
	if runs[0].Error == "" {
		t.Fatal("no reason for the interrupted run")
	}
}

// The clock jumps six hours forward (NTP after a boot without RTC): one
// run, the other instants recorded missed, the jump audited. Then it is
// set back three hours: nothing runs again until it passes the last
// decided instant.
func TestClockJumps(t *testing.T) {
	t.Parallel()
	hourly := Spec{ID: "hourly", Schedule: "@every 1h", Prompt: "read the meter", CatchUpWindow: "30m"}
	h := newHarness(t, t6.Add(-30*time.Minute))
	h.start(hourly)
	h.tick(t6.Add(time.Second))
	h.tick(t6.Add(6*time.Hour + 2*time.Minute))
	want := []string{"03-02T06:00  succeeded schedule"}
	for i := 7; i <= 11; i++ {
		want = append(want, fmt.Sprintf("03-02T%02d:00  missed catch_up", i))
	}
	want = append(want, "03-02T12:00  succeeded catch_up")
	equal(t, "after the forward jump", h.outcomes("hourly"), want)

	h.tick(t6.Add(3 * time.Hour))               // set back
	h.tick(t6.Add(3*time.Hour + 2*time.Minute)) // 09:00 again: decided already
	h.tick(t6.Add(6*time.Hour + 30*time.Minute))
	equal(t, "after the backward jump", h.outcomes("hourly"), want)
	h.tick(t6.Add(7*time.Hour + time.Second))
	want = append(want, "03-02T13:00  succeeded schedule")
	equal(t, "after the clock passed the watermark", h.outcomes("hourly"), want)
	if n := len(h.started()); n != 3 {
		t.Fatalf("%d conversations, want 3", n)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE kind = 'clock_jump' AND json_extract(detail, '$.direction') = 'backward'`); n != 1 {
		t.Fatalf("%d backward clock_jump events, want 1", n)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE kind = 'clock_jump' AND json_extract(detail, '$.direction') = 'forward'`); n < 2 {
		t.Fatalf("%d forward clock_jump events, want at least 2", n)
	}
}

// A job of two agents runs once per agent; the offline one fails with the
// reason and no conversation.
func TestAgentOffline(t *testing.T) {
	t.Parallel()
	job := morning
	job.Agents = []string{"pi-1", "pi-2"}
	job.Tools = []string{"{agent}__read_temp"}
	h := newHarness(t, t6.Add(-time.Hour))
	h.ready = func(_ context.Context, agent string) error {
		if agent == "pi-2" {
			return fmt.Errorf("edge agent %q is offline", agent)
		}
		return nil
	}
	h.start(job)
	h.tick(t6)
	equal(t, "runs", h.outcomes("morning"), []string{"03-02T06:00 pi-1 succeeded schedule", "03-02T06:00 pi-2 failed schedule"})
	runs, _ := h.store.JobRuns(context.Background(), "morning", 0)
	for _, r := range runs {
		if r.AgentID == "pi-2" && r.Error != `edge agent "pi-2" is offline` {
			t.Fatalf("reason %q", r.Error)
		}
	}
	rep, _ := sqlite.ReportByName("job-runs")
	res, err := sqlite.QueryReadOnly(context.Background(), h.path, rep.Query, "morning")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != `[[2026-03-02 pi-1 succeeded 1 ] [2026-03-02 pi-2 failed 0 edge agent "pi-2" is offline]]` {
		t.Fatalf("job-runs report: %s", got)
	}
	started := h.started()
	if len(started) != 1 || started[0].AgentID != "pi-1" || started[0].Tools[0] != "pi-1__read_temp" {
		t.Fatalf("conversations: %+v", started)
	}
}

// Outcomes: an error fails, a timeout is timed_out, every call failing
// fails.
func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		run     func(ctx context.Context, r Run) Result
		outcome string
	}{
		{"error", func(context.Context, Run) Result { return Result{Err: errors.New("llm down")} }, persistence.OutcomeFailed},
		{"timeout", func(ctx context.Context, _ Run) Result { <-ctx.Done(); return Result{Err: ctx.Err()} }, persistence.OutcomeTimedOut},
		{"all calls failed", func(context.Context, Run) Result { return Result{Calls: 2, FailedCalls: 2, FirstError: "offline"} },
			persistence.OutcomeFailed},
		{"no calls", func(context.Context, Run) Result { return Result{} }, persistence.OutcomeSucceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := morning
			job.Timeout = "50ms"
			h := newHarness(t, t6.Add(-time.Hour))
			h.run = tt.run
			h.start(job)
			h.tick(t6)
			equal(t, "runs", h.outcomes("morning"), []string{"03-02T06:00 pi-1 " + tt.outcome + " schedule"})
		})
	}
}

// A paused job does not run; resumed, it does not catch up the instants
// it was paused for. Pause survives a restart.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	h.start(morning)
	ctx := context.Background()
	if _, err := h.s.Pause(ctx, "morning", "alice"); err != nil {
		t.Fatal(err)
	}
	h.restart(morning)
	h.tick(t6.Add(time.Minute))
	if _, err := h.s.Resume(ctx, "morning", "alice"); err != nil {
		t.Fatal(err)
	}
	h.tick(t6.Add(2 * time.Minute))
	h.tick(t6.Add(24*time.Hour + time.Second))
	equal(t, "runs", h.outcomes("morning"), []string{"03-03T06:00 pi-1 succeeded schedule"})
	if _, err := h.s.Pause(ctx, "nope", "alice"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("pause unknown: %v", err)
	}
}

// Run-now runs at once, leaves the schedule alone, and a second one while
// the first runs is recorded skipped.
func TestRunNow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	release := make(chan struct{})
	h.run = func(ctx context.Context, _ Run) Result {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Result{}
	}
	h.start(morning)
	ctx := context.Background()
	runs, err := h.s.RunNow(ctx, "morning")
	if err != nil || len(runs) != 1 || runs[0].Outcome != "" {
		t.Fatalf("run now: %+v %v", runs, err)
	}
	h.clock.Set(t6.Add(-time.Hour + time.Second))
	runs, err = h.s.RunNow(ctx, "morning")
	if err != nil || runs[0].Outcome != persistence.OutcomeSkipped {
		t.Fatalf("second run now: %+v %v", runs, err)
	}
	close(release)
	h.s.Wait()
	h.tick(t6)
	equal(t, "runs", h.outcomes("morning"), []string{"03-02T05:00 pi-1 succeeded run_now", "03-02T05:00 pi-1 skipped run_now",
		"03-02T06:00 pi-1 succeeded schedule"})
}

// Jobs added over the API persist across restarts; config jobs cannot be
// removed from the API and vanish when the config drops them.
func TestAddRemovePersist(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	h.start(morning)
	ctx := context.Background()
	j, err := DecodeSpec([]byte(`{"id": "evening", "schedule": "CRON_TZ=UTC 0 18 * * *", "prompt": "close the valve"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Add(ctx, j, SourceAPI, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Add(ctx, j, SourceAPI, "alice"); !errors.Is(err, ErrExists) {
		t.Fatalf("add twice: %v", err)
	}
	if err := h.s.Remove(ctx, "morning", "alice"); !errors.Is(err, ErrConfigJob) {
		t.Fatalf("remove a config job: %v", err)
	}
	h.restart() // morning no longer declared
	list := h.s.List()
	if len(list) != 1 || list[0].ID != "evening" || list[0].Source != SourceAPI ||
		!list[0].Next.Equal(time.Date(2026, 3, 2, 18, 0, 0, 0, time.UTC)) {
		t.Fatalf("after restart: %+v", list)
	}
	if err := h.s.Remove(ctx, "evening", "alice"); err != nil {
		t.Fatal(err)
	}
	if len(h.s.List()) != 0 {
		t.Fatal("removed job listed")
	}
}

// TestStoredJobThatCannotBeScheduled: a job stored before a rule that now
// refuses its definition (here a one-second @every behind a time zone) is
// listed with why, refused to pause or run naming it, blocks its id with a
// message that says to remove it, and can be removed. Before, it was only
// logged at start: invisible in the list, impossible to remove, its id
// taken for good.
func TestStoredJobThatCannotBeScheduled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	ctx := context.Background()
	spec := []byte(`{"id": "fast", "schedule": "TZ=UTC @every 1s", "prompt": "poll"}`)
	if _, err := Compile(Spec{ID: "fast", Schedule: "TZ=UTC @every 1s", Prompt: "poll"}); err == nil {
		t.Fatal("the definition is schedulable: the test needs one this build refuses")
	}
	now := h.clock.Now()
	if _, err := h.store.PutJob(ctx, persistence.JobRecord{ID: "fast", Source: SourceAPI, Spec: spec, Created: now, Updated: now, Watermark: now}, "n1", "alice"); err != nil {
		t.Fatal(err)
	}
	h.start(morning)
	list := h.s.List()
	if len(list) != 2 || list[0].ID != "fast" || list[0].Schedule != "TZ=UTC @every 1s" || !strings.Contains(list[0].Error, "cannot be scheduled") ||
		list[1].ID != "morning" || list[1].Error != "" {
		t.Fatalf("list: %+v", list)
	}
	if _, err := h.s.Pause(ctx, "fast", "alice"); !errors.Is(err, ErrUnusable) {
		t.Fatalf("pause: %v", err)
	}
	if _, err := h.s.RunNow(ctx, "fast"); !errors.Is(err, ErrUnusable) {
		t.Fatalf("run now: %v", err)
	}
	j, err := DecodeSpec([]byte(`{"id": "fast", "schedule": "@every 1m", "prompt": "poll"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Add(ctx, j, SourceAPI, "alice"); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "remove it first") {
		t.Fatalf("add over it: %v", err)
	}
	h.tick(t6.Add(time.Minute))
	if runs := h.started(); len(runs) != 1 || runs[0].JobID != "morning" {
		t.Fatalf("runs: %+v", runs)
	}
	if err := h.s.Remove(ctx, "fast", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Add(ctx, j, SourceAPI, "alice"); err != nil {
		t.Fatalf("add after removing it: %v", err)
	}
	h.restart(morning)
	if list := h.s.List(); len(list) != 2 || list[0].ID != "fast" || list[0].Error != "" || list[0].Schedule != "@every 1m" {
		t.Fatalf("after restart: %+v", list)
	}
}
