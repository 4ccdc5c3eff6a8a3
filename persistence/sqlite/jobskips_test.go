package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// skipTotalSQL adds up a job's skips as docs/AUDIT.md tells an auditor
// to: the job_run events of skips recorded in full, the counts of the
// job_runs_skipped events, and what job_skips still counts.
const skipTotalSQL = `SELECT
	(SELECT count(*) FROM events WHERE kind = 'job_run' AND json_extract(detail, '$.outcome') = 'skipped'
		AND json_extract(detail, '$.job') = ?1)
	+ (SELECT coalesce(sum(json_extract(detail, '$.skipped')), 0) FROM events WHERE kind = 'job_runs_skipped'
		AND json_extract(detail, '$.job') = ?1)
	+ (SELECT coalesce(sum(skipped), 0) FROM job_skips WHERE job_id = ?1)`

// Skipped runs are recorded in aggregate: a job skipped at every instant
// for every agent writes one job_run event and job_runs row per window and
// one job_runs_skipped event when the window closes, not one of each per
// skip (64 agents: 64 a minute before), and no skip goes uncounted: the
// audit's own totals equal the skips fed, at every step, across a
// restart, and after the job is removed; the chain verifies.
func TestSkipsRecordedInAggregate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	const agents = 64
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.PutJob(ctx, persistence.JobRecord{ID: "j", Source: "api", Spec: json.RawMessage(`{}`)}, "n1", "api"); err != nil {
		t.Fatal(err)
	}
	fed := 0
	// tick records the instant of minute m: every agent skipped, but
	// the first `start` agents, whose runs start.
	tick := func(m, start int) {
		t.Helper()
		at := t0.Add(time.Duration(m) * time.Minute)
		var runs []persistence.JobRun
		for a := range agents {
			r := persistence.JobRun{JobID: "j", Scheduled: at, AgentID: fmt.Sprintf("a%02d", a), Trigger: persistence.TriggerSchedule, Node: "n1"}
			if a < start {
				r.Started, r.ConversationID = at, fmt.Sprintf("c-%d-%d", m, a)
			} else {
				r.Outcome, r.Finished, r.Error = persistence.OutcomeSkipped, at, "skipped: 4 job runs are running, the most at once"
				fed++
			}
			runs = append(runs, r)
		}
		if _, err := s.RecordJobRuns(ctx, "j", at, runs); err != nil {
			t.Fatal(err)
		}
	}
	count := func(q string) int64 {
		t.Helper()
		return queryOne(t, path, q).(int64)
	}
	skipEvents := func() int64 {
		return count(`SELECT count(*) FROM events WHERE kind = 'job_run' AND json_extract(detail, '$.outcome') = 'skipped'`)
	}
	summaries := func() int64 { return count(`SELECT count(*) FROM events WHERE kind = 'job_runs_skipped'`) }
	total := func() int64 { return queryOne(t, path, skipTotalSQL, "j").(int64) }

	minutes := int(time.Hour / time.Minute) // a window's worth
	for _, step := range []struct {
		name           string
		from, to       int // minutes fed, [from, to)
		start          int // runs started at each
		skipEvents     int64
		summaries      int64
		skippedRowsMax int64
	}{
		{"skipped for an hour", 0, minutes, 0, 1, 0, 1},
		{"the next hour opens a new window", minutes, minutes + 5, 0, 2, 1, 2},
		{"a run starts", minutes + 5, minutes + 6, 1, 3, 2, 3},
		{"skipped again", minutes + 6, minutes + 30, 0, 3, 2, 3},
	} {
		for m := step.from; m < step.to; m++ {
			tick(m, step.start)
		}
		if got := skipEvents(); got != step.skipEvents {
			t.Errorf("%s: %d skipped job_run events, want %d", step.name, got, step.skipEvents)
		}
		if got := summaries(); got != step.summaries {
			t.Errorf("%s: %d job_runs_skipped events, want %d", step.name, got, step.summaries)
		}
		if got := count(`SELECT count(*) FROM job_runs WHERE outcome = 'skipped'`); got > step.skippedRowsMax {
			t.Errorf("%s: %d skipped job_runs rows, want at most %d", step.name, got, step.skippedRowsMax)
		}
		if got := total(); got != int64(fed) {
			t.Fatalf("%s: the audit counts %d skips, %d were fed", step.name, got, fed)
		}
	}

	// A restart keeps the open window's count.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	if got := total(); got != int64(fed) {
		t.Fatalf("after a restart the audit counts %d skips, %d were fed", got, fed)
	}
	// Removing the job writes what its window counted.
	if err := s2.DeleteJob(ctx, "j", "n1", "api"); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM job_skips`); n != 0 {
		t.Fatalf("%d job_skips rows after the job was removed", n)
	}
	if got := total(); got != int64(fed) {
		t.Fatalf("after the job was removed the audit counts %d skips, %d were fed", got, fed)
	}
	var d struct {
		Skipped     int64
		First, Last time.Time
	}
	last := queryOne(t, path, `SELECT detail FROM events WHERE kind = 'job_runs_skipped' ORDER BY chain_seq DESC LIMIT 1`).(string)
	if err := json.Unmarshal([]byte(last), &d); err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(time.Duration(minutes+29) * time.Minute); d.Skipped == 0 || !d.Last.Equal(want) || !d.First.Before(d.Last) {
		t.Fatalf("last summary %s: want the last instant %s", last, want)
	}
	if _, err := VerifyChain(ctx, path); err != nil {
		t.Fatalf("verify: %v", err)
	}
}
