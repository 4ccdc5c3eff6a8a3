package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// The statements on job_runs that run per request or per delete read it
// through an index, never the whole table: GET /v1/runs without ?job=
// sorted all 127,000 rows 256 jobs keep (0.2 to 0.4 s a request), and
// pruning the runs of removed jobs read them all on every delete.
func TestJobRunsStatementsUseIndexes(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	for _, tc := range []struct {
		name, stmt string
		args       []any
		sortAllows bool // a temporary sort of the few rows found is fine
	}{
		{"runs of every job", jobRunsSQL(false), []any{50}, false},
		{"runs of one job", jobRunsSQL(true), []any{"j", 50}, false},
		{"prune the runs of removed jobs", pruneRemovedRunsSQL, []any{DefaultJobRunsKept}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := queryPlan(t, s.rdb, tc.stmt, tc.args...)
			if len(plan) == 0 {
				t.Fatal("no query plan")
			}
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN job_runs") && !strings.Contains(step, "INDEX") {
					t.Errorf("reads the whole table: %q in\n%s", step, strings.Join(plan, "\n"))
				}
				if !tc.sortAllows && strings.Contains(step, "TEMP B-TREE FOR ORDER BY") {
					t.Errorf("sorts what it reads: %q in\n%s", step, strings.Join(plan, "\n"))
				}
			}
		})
	}
}

// A database of schema version 9 (before job_runs_scheduled and
// job_skips) is migrated when it is opened: it gains the index and the
// table, keeps its runs, and its audit chain verifies.
func TestMigrateV9AddsRunsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		id := fmt.Sprintf("j%d", i)
		if _, err := s.PutJob(ctx, persistence.JobRecord{ID: id, Source: "api", Spec: json.RawMessage(`{}`)}, "n1", "api"); err != nil {
			t.Fatal(err)
		}
		var runs []persistence.JobRun
		for k := range 4 {
			at := t0.Add(time.Duration(k*3+i) * time.Minute)
			runs = append(runs, persistence.JobRun{JobID: id, Scheduled: at, AgentID: "a", Trigger: persistence.TriggerSchedule,
				Outcome: persistence.OutcomeMissed, Finished: at, Node: "n1"})
		}
		if _, err := s.RecordJobRuns(ctx, id, time.Time{}, runs); err != nil {
			t.Fatal(err)
		}
	}
	want, err := s.JobRuns(ctx, "", 0)
	if err != nil || len(want) != 12 {
		t.Fatalf("runs before: %d %v", len(want), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tamperSchema(t, path, undoV12+`DROP TABLE job_skips; DROP INDEX job_runs_scheduled; PRAGMA user_version = 9`)
	if v := queryOne(t, path, "PRAGMA user_version"); v != int64(9) {
		t.Fatalf("downgraded to %v", v)
	}
	before, err := VerifyChain(ctx, path)
	if err != nil {
		t.Fatalf("v9 as it is: %v", err)
	}

	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.JobRuns(ctx, "", 0)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("runs after: %d %v", len(got), err)
	}
	for i := range want {
		if got[i].JobID != want[i].JobID || !got[i].Scheduled.Equal(want[i].Scheduled) {
			t.Fatalf("run %d after the upgrade %+v, before %+v", i, got[i], want[i])
		}
	}
	if v := queryOne(t, path, "PRAGMA user_version"); v != int64(len(migrations)) {
		t.Fatalf("schema version %v, want %d", v, len(migrations))
	}
	if n := queryOne(t, path, `SELECT count(*) FROM sqlite_master WHERE name IN ('job_runs_scheduled', 'job_skips')`); n != int64(2) {
		t.Fatalf("%v of job_runs_scheduled and job_skips after the upgrade", n)
	}
	after, err := VerifyChain(ctx, path)
	if err != nil || after.Verified != before.Verified || after.HeadSeq != before.HeadSeq {
		t.Fatalf("verify after the upgrade: %+v, %v (before %+v)", after, err, before)
	}
}
