package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// A run is claimed once per (job, instant, agent), the watermark only
// moves up, finishing writes the outcome and its chained event, and a
// reopened store sees the unfinished runs.
func TestJobRunsClaimOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	t0 := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	if _, err := s.PutJob(ctx, persistence.JobRecord{ID: "morning", Source: "config", Spec: json.RawMessage(`{"cron":"0 6 * * *"}`),
		Watermark: t0.Add(-time.Hour)}, "n1", "config"); err != nil {
		t.Fatal(err)
	}
	run := persistence.JobRun{JobID: "morning", Scheduled: t0, AgentID: "pi-1", Trigger: persistence.TriggerSchedule, Started: t0, Node: "n1"}
	got, err := s.RecordJobRuns(ctx, "morning", t0, []persistence.JobRun{run})
	if err != nil || !got[0] {
		t.Fatalf("first claim: %v %v", got, err)
	}
	got, err = s.RecordJobRuns(ctx, "morning", t0.Add(-2*time.Hour), []persistence.JobRun{run})
	if err != nil || got[0] {
		t.Fatalf("second claim of the same instant: %v %v", got, err)
	}
	jobs, err := s.Jobs(ctx)
	if err != nil || len(jobs) != 1 || !jobs[0].Watermark.Equal(t0) {
		t.Fatalf("watermark after a lower one: %+v %v", jobs, err)
	}
	un, err := s.UnfinishedJobRuns(ctx)
	if err != nil || len(un) != 1 || un[0].AgentID != "pi-1" {
		t.Fatalf("unfinished: %+v %v", un, err)
	}
	run.Outcome, run.Finished, run.Error = persistence.OutcomeFailed, t0.Add(time.Minute), "edge agent offline"
	if err := s.FinishJobRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishJobRun(ctx, run); !errors.Is(err, ErrRunNotRunning) {
		t.Fatalf("finish twice: %v", err)
	}
	runs, err := s.JobRuns(ctx, "morning", 0)
	if err != nil || len(runs) != 1 || runs[0].Outcome != persistence.OutcomeFailed || runs[0].Error != "edge agent offline" {
		t.Fatalf("history: %+v %v", runs, err)
	}
	n := queryOne(t, path, `SELECT count(*) FROM events WHERE kind = 'job_run' AND agent_id = 'pi-1'
		AND json_extract(detail, '$.outcome') = 'failed' AND json_extract(detail, '$.job') = 'morning'`)
	if n != int64(1) {
		t.Fatalf("job_run events: %v", n)
	}
	if _, err := VerifyChain(ctx, path); err != nil {
		t.Fatalf("chain after job runs: %v", err)
	}
}

// Pausing and resuming are events; resuming moves the watermark to the
// resume time.
func TestJobPauseResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	t0 := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	if err := s.SetJobPaused(ctx, "nope", true, t0, "n1", "me"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("pause unknown: %v", err)
	}
	if _, err := s.PutJob(ctx, persistence.JobRecord{ID: "j", Source: "api", Spec: json.RawMessage(`{}`), Watermark: t0}, "n1", "me"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetJobPaused(ctx, "j", true, t0.Add(time.Hour), "n1", "me"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetJobPaused(ctx, "j", false, t0.Add(5*time.Hour), "n1", "me"); err != nil {
		t.Fatal(err)
	}
	jobs, _ := s.Jobs(ctx)
	if jobs[0].Paused || !jobs[0].Watermark.Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("after resume: %+v", jobs[0])
	}
}

// Finished runs beyond DefaultJobRunsKept are pruned, oldest first.
func TestJobRunsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var runs []persistence.JobRun
	for i := range DefaultJobRunsKept + 10 {
		at := t0.Add(time.Duration(i) * time.Minute)
		runs = append(runs, persistence.JobRun{JobID: "j", Scheduled: at, Trigger: persistence.TriggerSchedule,
			Outcome: persistence.OutcomeMissed, Finished: at})
	}
	if _, err := s.RecordJobRuns(ctx, "j", time.Time{}, runs); err != nil {
		t.Fatal(err)
	}
	if n := queryOne(t, path, `SELECT count(*) FROM job_runs`); n != int64(DefaultJobRunsKept) {
		t.Fatalf("kept %v runs", n)
	}
	if n := queryOne(t, path, `SELECT min(scheduled_ms) FROM job_runs`); n != t0.Add(10*time.Minute).UnixMilli() {
		t.Fatalf("oldest kept %v", n)
	}
}

// The runs of removed jobs stay readable by their job's id, but the
// newest DefaultJobRunsKept of them all together: jobs added, run and
// removed under new ids grew job_runs without end (10,000 rows in 1.6 s
// over the API). A stored job's runs are not touched by it.
func TestRemovedJobsRunsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(id string) {
		t.Helper()
		if _, err := s.PutJob(ctx, persistence.JobRecord{ID: id, Source: "api", Spec: json.RawMessage(`{}`)}, "n1", "api"); err != nil {
			t.Fatal(err)
		}
	}
	record := func(id string, n int) {
		t.Helper()
		var runs []persistence.JobRun
		for i := range n {
			at := t0.Add(time.Duration(i) * time.Second)
			runs = append(runs, persistence.JobRun{JobID: id, Scheduled: at, Trigger: persistence.TriggerRunNow,
				Outcome: persistence.OutcomeFailed, Finished: at})
		}
		if _, err := s.RecordJobRuns(ctx, id, time.Time{}, runs); err != nil {
			t.Fatal(err)
		}
	}
	count := func(where string) any { return queryOne(t, path, `SELECT count(*) FROM job_runs WHERE `+where) }

	put("kept")
	record("kept", 300)
	const removed, each = 6, 200
	for i := range removed {
		id := fmt.Sprintf("gone-%d", i)
		put(id)
		record(id, each)
		if err := s.DeleteJob(ctx, id, "n1", "api"); err != nil {
			t.Fatal(err)
		}
	}
	// A job removed while its run runs: the run ends after the removal.
	put("late")
	running := persistence.JobRun{JobID: "late", Scheduled: t0, Trigger: persistence.TriggerRunNow, Started: t0, Node: "n1"}
	if _, err := s.RecordJobRuns(ctx, "late", time.Time{}, []persistence.JobRun{running}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteJob(ctx, "late", "n1", "api"); err != nil {
		t.Fatal(err)
	}
	running.Outcome, running.Finished = persistence.OutcomeSucceeded, t0.Add(time.Minute)
	if err := s.FinishJobRun(ctx, running); err != nil {
		t.Fatal(err)
	}

	gone := `job_id NOT IN (SELECT job_id FROM jobs)`
	if n := count(gone); n != int64(DefaultJobRunsKept) {
		t.Fatalf("%d runs of removed jobs kept, want %d", n, DefaultJobRunsKept)
	}
	if n := count(`job_id = 'kept'`); n != int64(300) {
		t.Fatalf("%d runs of the stored job kept, want 300", n)
	}
	// The newest are kept: the late run, the last removed job's whole history.
	if n := count(fmt.Sprintf(`job_id IN ('late', 'gone-%d')`, removed-1)); n != int64(each+1) {
		t.Fatalf("%d runs of the last removed jobs, want %d", n, each+1)
	}
	if n := count(`job_id = 'gone-0'`); n != int64(0) {
		t.Fatalf("%d runs of the first removed job, want 0", n)
	}
	runs, err := s.JobRuns(ctx, "late", 0)
	if err != nil || len(runs) != 1 || runs[0].Outcome != persistence.OutcomeSucceeded {
		t.Fatalf("removed job's history by id: %+v %v", runs, err)
	}
}

// Approvals: bounded pending queue, one decision each, naming who.
func TestApprovalsQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	t0 := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	mk := func(id string) persistence.Approval {
		return persistence.Approval{ID: id, Tool: "pi-1__reboot", AgentID: "pi-1", Reason: "tools pi-1__*", Params: `{}`,
			Requested: t0, Expires: t0.Add(5 * time.Minute), Node: "n1"}
	}
	for _, id := range []string{"a1", "a2"} {
		if err := s.CreateApproval(ctx, mk(id), 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateApproval(ctx, mk("a3"), 2); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("third pending: %v", err)
	}
	a, err := s.DecideApproval(ctx, "a1", persistence.ApprovalApproved, "alice", "ok", "n1", t0.Add(time.Minute))
	if err != nil || a.State != persistence.ApprovalApproved || a.DecidedBy != "alice" {
		t.Fatalf("approve: %+v %v", a, err)
	}
	if _, err := s.DecideApproval(ctx, "a1", persistence.ApprovalDenied, "bob", "", "n1", t0); !errors.Is(err, ErrDecided) {
		t.Fatalf("second decision: %v", err)
	}
	if _, err := s.DecideApproval(ctx, "zz", persistence.ApprovalDenied, "bob", "", "n1", t0); !errors.Is(err, ErrNoApproval) {
		t.Fatalf("unknown: %v", err)
	}
	pending, err := s.Approvals(ctx, persistence.ApprovalPending, 0)
	if err != nil || len(pending) != 1 || pending[0].ID != "a2" {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	if err := s.CreateApproval(ctx, mk("a3"), 2); err != nil {
		t.Fatalf("after a decision there is room: %v", err)
	}
	if n := queryOne(t, path, `SELECT count(*) FROM events WHERE kind IN ('approval_requested', 'approval_decided')`); n != int64(4) {
		t.Fatalf("approval events: %v", n)
	}
	if _, err := VerifyChain(ctx, path); err != nil {
		t.Fatal(err)
	}
}
