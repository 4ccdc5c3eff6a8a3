package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// Bounds of the scheduler's tables.
const (
	// DefaultJobRunsKept is how many finished runs of one job job_runs
	// keeps; older ones are deleted as new ones finish. The jobs no longer
	// stored keep as many, all of them together. Their job_run events
	// stay in the audit trail under its own retention.
	DefaultJobRunsKept = 500
	// MaxJobs bounds the jobs a node stores (config, API and model jobs).
	MaxJobs = 256
)

// Sentinel errors of the scheduler's tables.
var (
	// ErrNoJob reports a job id the store does not have.
	ErrNoJob = errors.New("no such job")
	// ErrTooManyJobs refuses a job beyond MaxJobs.
	ErrTooManyJobs = errors.New("too many jobs")
	// ErrRunNotRunning refuses to finish a run that was never claimed or
	// has finished already.
	ErrRunNotRunning = errors.New("job run is not running")
)

// PutJob stores j, replacing the definition and source of a job with the
// same id but keeping its paused state and watermark. A new job starts
// with j.Paused and j.Watermark. A job_changed event (change "added" or
// "changed") is written with it unless the definition is unchanged; added
// reports whether the job is new.
func (s *Store) PutJob(ctx context.Context, j persistence.JobRecord, node, by string) (added bool, err error) {
	if j.ID == "" || !json.Valid(j.Spec) {
		return false, fmt.Errorf("put job: %w: empty id or invalid spec", ErrInvalidOptions)
	}
	now := j.Updated
	if now.IsZero() {
		now = time.Now()
	}
	err = s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		added = false
		var old string
		err := tx.QueryRowContext(ctx, `SELECT spec FROM jobs WHERE job_id = ?`, j.ID).Scan(&old)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
				return err
			}
			if n >= MaxJobs {
				return fmt.Errorf("%w: a node keeps at most %d", ErrTooManyJobs, MaxJobs)
			}
			added = true
			if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (job_id, source, spec, paused, created_ms, updated_ms, watermark_ms)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, j.ID, j.Source, string(j.Spec), j.Paused, now.UnixMilli(), now.UnixMilli(),
				nullTime(j.Watermark)); err != nil {
				return err
			}
		case err != nil:
			return err
		case old == string(j.Spec):
			return nil
		default:
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET source = ?, spec = ?, updated_ms = ? WHERE job_id = ?`,
				j.Source, string(j.Spec), now.UnixMilli(), j.ID); err != nil {
				return err
			}
		}
		change := "changed"
		if added {
			change = "added"
		}
		return s.jobEvent(ctx, tx, now, node, "", map[string]any{"job": j.ID, "change": change, "source": j.Source, "by": by,
			"spec": json.RawMessage(j.Spec)})
	})
	if err != nil {
		return false, fmt.Errorf("put job %q: %w", j.ID, err)
	}
	return added, nil
}

// DeleteJob removes job id with a job_changed event, after the
// job_runs_skipped event of the skips it counted (jobskips.go). Its runs
// stay among those of the removed jobs (see pruneRemovedRuns).
func (s *Store) DeleteJob(ctx context.Context, id, node, by string) error {
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE job_id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNoJob
		}
		now := time.Now()
		if err := s.closeSkipWindow(ctx, tx, id, now, node); err != nil {
			return err
		}
		if err := pruneRemovedRuns(ctx, tx); err != nil {
			return err
		}
		return s.jobEvent(ctx, tx, now, node, "", map[string]any{"job": id, "change": "removed", "by": by})
	})
	if err != nil {
		return fmt.Errorf("delete job %q: %w", id, err)
	}
	return nil
}

// SetJobPaused pauses or resumes job id, with a job_changed event naming
// by. Resuming sets the watermark to at: instants that passed while the
// job was paused are neither run nor recorded as missed.
func (s *Store) SetJobPaused(ctx context.Context, id string, paused bool, at time.Time, node, by string) error {
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		q := `UPDATE jobs SET paused = 1, updated_ms = ? WHERE job_id = ?`
		args := []any{at.UnixMilli(), id}
		change := "paused"
		if !paused {
			q = `UPDATE jobs SET paused = 0, updated_ms = ?, watermark_ms = max(coalesce(watermark_ms, 0), ?) WHERE job_id = ?`
			args = []any{at.UnixMilli(), at.UnixMilli(), id}
			change = "resumed"
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNoJob
		}
		return s.jobEvent(ctx, tx, at, node, "", map[string]any{"job": id, "change": change, "by": by})
	})
	if err != nil {
		return fmt.Errorf("set job %q paused=%t: %w", id, paused, err)
	}
	return nil
}

// Jobs returns every stored job, by id.
func (s *Store) Jobs(ctx context.Context) ([]persistence.JobRecord, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT job_id, source, spec, paused, created_ms, updated_ms, watermark_ms FROM jobs ORDER BY job_id`)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []persistence.JobRecord
	for rows.Next() {
		var (
			j                persistence.JobRecord
			spec             string
			created, updated int64
			wm               sql.NullInt64
		)
		if err := rows.Scan(&j.ID, &j.Source, &spec, &j.Paused, &created, &updated, &wm); err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		j.Spec = json.RawMessage(spec)
		j.Created, j.Updated = time.UnixMilli(created), time.UnixMilli(updated)
		if wm.Valid {
			j.Watermark = time.UnixMilli(wm.Int64)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// RecordJobRuns claims or records runs of one job in one transaction and
// moves the job's watermark up to watermark (never down). A run without an
// Outcome is claimed as running (event job_run_started); one with an
// Outcome (missed, skipped, failed before it started) is recorded as ended
// (event job_run), but for a skip counted in the job's open window
// (jobskips.go). claimed[i] is false when run i's (job, instant, agent)
// was claimed before, or the skip was only counted: it must not start.
func (s *Store) RecordJobRuns(ctx context.Context, jobID string, watermark time.Time, runs []persistence.JobRun) (claimed []bool, err error) {
	err = s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		claimed = make([]bool, len(runs))
		for _, r := range runs {
			if r.Outcome == "" { // a run starts: the job's skips so far end
				if err := s.closeSkipWindow(ctx, tx, jobID, r.Started, r.Node); err != nil {
					return err
				}
				break
			}
		}
		for i, r := range runs {
			if r.JobID != jobID {
				return fmt.Errorf("run of job %q in a batch of %q", r.JobID, jobID)
			}
			if r.Outcome == persistence.OutcomeSkipped {
				counted, err := s.countSkip(ctx, tx, r)
				if err != nil {
					return err
				}
				if counted {
					continue
				}
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO job_runs (job_id, scheduled_ms, agent_id, trigger, outcome, conversation_id,
				started_ms, finished_ms, error, missed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (job_id, scheduled_ms, agent_id) DO NOTHING`,
				r.JobID, r.Scheduled.UnixMilli(), r.AgentID, r.Trigger, nullIfEmpty(r.Outcome), nullIfEmpty(r.ConversationID),
				nullTime(r.Started), nullTime(r.Finished), nullIfEmpty(r.Error), r.Missed)
			if err != nil {
				return fmt.Errorf("insert run: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			claimed[i] = true
			kind, at := persistence.EventJobRunStarted, r.Started
			if r.Outcome != "" {
				kind, at = persistence.EventJobRun, r.Finished
			}
			if err := s.insertChained(ctx, tx, "events", runEventArgs(kind, at, r)); err != nil {
				return err
			}
			if r.Outcome == persistence.OutcomeSkipped {
				if err := openSkipWindow(ctx, tx, r); err != nil {
					return err
				}
			}
		}
		if !watermark.IsZero() {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET watermark_ms = max(coalesce(watermark_ms, 0), ?) WHERE job_id = ?`,
				watermark.UnixMilli(), jobID); err != nil {
				return fmt.Errorf("advance watermark: %w", err)
			}
		}
		return pruneRuns(ctx, tx, jobID)
	})
	if err != nil {
		return nil, fmt.Errorf("record runs of job %q: %w", jobID, err)
	}
	return claimed, nil
}

// FinishJobRun records how a claimed run ended, with its job_run event, in
// one transaction. A run not claimed, or already ended, is refused with
// ErrRunNotRunning.
func (s *Store) FinishJobRun(ctx context.Context, r persistence.JobRun) error {
	if r.Outcome == "" {
		return fmt.Errorf("finish run of job %q: no outcome", r.JobID)
	}
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE job_runs SET outcome = ?, conversation_id = coalesce(?, conversation_id),
			finished_ms = ?, error = ? WHERE job_id = ? AND scheduled_ms = ? AND agent_id = ? AND outcome IS NULL`,
			r.Outcome, nullIfEmpty(r.ConversationID), r.Finished.UnixMilli(), nullIfEmpty(r.Error),
			r.JobID, r.Scheduled.UnixMilli(), r.AgentID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrRunNotRunning
		}
		if err := s.insertChained(ctx, tx, "events", runEventArgs(persistence.EventJobRun, r.Finished, r)); err != nil {
			return err
		}
		// A run outlives its job when the job is removed while it runs.
		var stored int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE job_id = ?`, r.JobID).Scan(&stored); err != nil {
			return err
		}
		if stored == 0 {
			return pruneRemovedRuns(ctx, tx)
		}
		return pruneRuns(ctx, tx, r.JobID)
	})
	if err != nil {
		return fmt.Errorf("finish run of job %q at %s: %w", r.JobID, r.Scheduled.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// JobRuns returns the runs of jobID (every job when empty), newest
// scheduled instant first, at most limit (all when limit <= 0). Unfinished
// runs have an empty Outcome.
func (s *Store) JobRuns(ctx context.Context, jobID string, limit int) ([]persistence.JobRun, error) {
	if limit <= 0 {
		limit = -1
	}
	if jobID == "" {
		return s.scanRuns(ctx, jobRunsSQL(false), limit)
	}
	return s.scanRuns(ctx, jobRunsSQL(true), jobID, limit)
}

// jobRunsSQL is JobRuns' query, of one job (its arguments the job's id
// and the limit) or of all (the limit). Either is read newest first from
// an index: (job_id, scheduled_ms, agent_id) of the claim, or
// job_runs_scheduled (schema_v10.go).
func jobRunsSQL(oneJob bool) string {
	q := `SELECT job_id, scheduled_ms, agent_id, trigger, coalesce(outcome, ''), coalesce(conversation_id, ''),
		started_ms, finished_ms, coalesce(error, ''), missed FROM job_runs`
	if oneJob {
		q += ` WHERE job_id = ?`
	}
	return q + ` ORDER BY scheduled_ms DESC, agent_id DESC, id DESC LIMIT ?`
}

// UnfinishedJobRuns returns the runs claimed and never finished: at start,
// the runs a stopped or killed node left.
func (s *Store) UnfinishedJobRuns(ctx context.Context) ([]persistence.JobRun, error) {
	return s.scanRuns(ctx, `SELECT job_id, scheduled_ms, agent_id, trigger, '', coalesce(conversation_id, ''),
		started_ms, finished_ms, coalesce(error, ''), missed FROM job_runs WHERE outcome IS NULL ORDER BY scheduled_ms`)
}

func (s *Store) scanRuns(ctx context.Context, q string, args ...any) ([]persistence.JobRun, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list job runs: %w", err)
	}
	defer rows.Close()
	var out []persistence.JobRun
	for rows.Next() {
		var (
			r                 persistence.JobRun
			sched             int64
			started, finished sql.NullInt64
		)
		if err := rows.Scan(&r.JobID, &sched, &r.AgentID, &r.Trigger, &r.Outcome, &r.ConversationID,
			&started, &finished, &r.Error, &r.Missed); err != nil {
			return nil, fmt.Errorf("list job runs: %w", err)
		}
		r.Scheduled = time.UnixMilli(sched)
		if started.Valid {
			r.Started = time.UnixMilli(started.Int64)
		}
		if finished.Valid {
			r.Finished = time.UnixMilli(finished.Int64)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list job runs: %w", err)
	}
	return out, nil
}

// pruneRuns keeps the newest DefaultJobRunsKept ended runs of jobID.
func pruneRuns(ctx context.Context, tx dbtx, jobID string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM job_runs WHERE job_id = ? AND outcome IS NOT NULL AND id NOT IN
		(SELECT id FROM job_runs WHERE job_id = ? AND outcome IS NOT NULL ORDER BY scheduled_ms DESC LIMIT ?)`,
		jobID, jobID, DefaultJobRunsKept)
	if err != nil {
		return fmt.Errorf("prune job runs: %w", err)
	}
	return nil
}

// pruneRemovedRuns keeps the newest DefaultJobRunsKept ended runs of the
// jobs no longer stored, all of them together. A removed job's history
// stays readable by its id, but pruneRuns never sees it again: jobs added,
// run and removed under new ids grew job_runs without end, beyond any
// retention of the audit trail.
//
// The removed jobs are found by walking the distinct job ids of job_runs
// in its (job_id, scheduled_ms, agent_id) index, one seek per id (at most
// MaxJobs stored and DefaultJobRunsKept removed), and their runs by the
// same index: asking for the runs whose job_id is NOT IN jobs read the
// whole table on every delete (18 ms at 127,000 runs).
func pruneRemovedRuns(ctx context.Context, tx dbtx) error {
	_, err := tx.ExecContext(ctx, pruneRemovedRunsSQL, DefaultJobRunsKept)
	if err != nil {
		return fmt.Errorf("prune runs of removed jobs: %w", err)
	}
	return nil
}

// pruneRemovedRunsSQL is pruneRemovedRuns' statement; its one argument
// is how many runs to keep.
const pruneRemovedRunsSQL = `WITH RECURSIVE ids(job) AS (
		SELECT (SELECT min(job_id) FROM job_runs)
		UNION ALL SELECT (SELECT min(job_id) FROM job_runs WHERE job_id > job) FROM ids WHERE job IS NOT NULL),
	removed(job) AS (SELECT job FROM ids WHERE job IS NOT NULL AND job NOT IN (SELECT job_id FROM jobs))
	DELETE FROM job_runs WHERE outcome IS NOT NULL AND job_id IN removed
		AND id NOT IN (SELECT id FROM job_runs WHERE outcome IS NOT NULL AND job_id IN removed ORDER BY id DESC LIMIT ?)`

// runEventArgs builds the events row of a run.
func runEventArgs(kind string, at time.Time, r persistence.JobRun) []any {
	if at.IsZero() {
		at = time.Now()
	}
	d := map[string]any{"job": r.JobID, "scheduled": r.Scheduled.UTC().Format(time.RFC3339), "trigger": r.Trigger}
	if r.Outcome != "" {
		d["outcome"] = r.Outcome
	}
	if r.ConversationID != "" {
		d["conversation_id"] = r.ConversationID
	}
	if r.Error != "" {
		d["error"] = persistence.Excerpt(r.Error)
	}
	if r.Missed > 0 {
		d["missed_before"] = r.Missed
	}
	if !r.Started.IsZero() && !r.Finished.IsZero() {
		d["elapsed_ms"] = r.Finished.Sub(r.Started).Milliseconds()
	}
	return eventArgs(kind, at, r.Node, r.AgentID, d)
}

// jobEvent writes a chained event about a job inside tx.
func (s *Store) jobEvent(ctx context.Context, tx dbtx, at time.Time, node, agent string, detail map[string]any) error {
	return s.insertChained(ctx, tx, "events", eventArgs(persistence.EventJobChanged, at, node, agent, detail))
}

// eventArgs builds an events row.
func eventArgs(kind string, at time.Time, node, agent string, detail map[string]any) []any {
	b, _ := json.Marshal(detail) // built from plain values
	t := at.UTC()
	if node == "" {
		node = "-"
	}
	return []any{persistence.NewRecordID(), t.Format(tsLayout), t.UnixMilli(), node, nullIfEmpty(agent), kind, string(b)}
}

// nullTime stores a zero time as NULL, else Unix milliseconds.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}
