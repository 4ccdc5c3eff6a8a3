package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// Skipped runs are recorded in aggregate, per job. A job whose runs are
// skipped (one still running, or the scheduler's bound of runs at once
// reached) is skipped at every instant for every agent: recorded one by
// one, 256 every-minute jobs of 64 agents wrote 16,384 job_run events
// (5.5 MB of audit trail) and as many job_runs rows a minute.
//
// The first skip of a job is recorded in full (a job_runs row and its
// job_run event) and opens the job's window of SkipSummaryWindow from its
// scheduled instant. The job's further skips scheduled within the window
// are only counted in job_skips (first and last scheduled instant, the
// newest reason). The count is written to the chain as one
// job_runs_skipped event, and the window closed, when a skip falls past
// the window (that skip then opens the next one), when a run of the job
// starts, or when the job is removed. Until then it stays in job_skips,
// which a restart keeps: every skip is in a job_run event, in a
// job_runs_skipped event's count, or in job_skips (docs/AUDIT.md gives the
// query that adds them up).

// SkipSummaryWindow is how long, in scheduled time, a job's skips after
// one recorded in full are counted rather than recorded: one job_run and
// at most one job_runs_skipped event a window for a job skipped at every
// instant, whatever its schedule and number of agents.
const SkipSummaryWindow = time.Hour

// countSkip decides skip r of its job within tx: it returns true when r
// was counted in the job's open window (nothing else is recorded of it),
// false when it is to be recorded in full (openSkipWindow after that). A
// skip past the window closes it first (closeSkipWindow). A skip of a
// (job, instant, agent) recorded before is neither counted nor recorded,
// as the claim refuses it.
func (s *Store) countSkip(ctx context.Context, tx dbtx, r persistence.JobRun) (counted bool, err error) {
	at := r.Scheduled.UnixMilli()
	var window int64
	err = tx.QueryRowContext(ctx, `SELECT window_ms FROM job_skips WHERE job_id = ?`, r.JobID).Scan(&window)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read skips of job: %w", err)
	case at < window || at >= window+SkipSummaryWindow.Milliseconds():
		return false, s.closeSkipWindow(ctx, tx, r.JobID, r.Finished, r.Node)
	}
	var seen int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM job_runs WHERE job_id = ? AND scheduled_ms = ? AND agent_id = ?`,
		r.JobID, at, r.AgentID).Scan(&seen); err != nil {
		return false, fmt.Errorf("read run: %w", err)
	}
	if seen > 0 {
		return true, nil // decided before: the claim's rule
	}
	if _, err := tx.ExecContext(ctx, `UPDATE job_skips SET skipped = skipped + 1, first_ms = min(coalesce(first_ms, ?1), ?1),
		last_ms = max(coalesce(last_ms, ?1), ?1), reason = ?2 WHERE job_id = ?3`,
		at, persistence.Excerpt(r.Error), r.JobID); err != nil {
		return false, fmt.Errorf("count skip: %w", err)
	}
	return true, nil
}

// openSkipWindow opens job's window at the instant of the skip r recorded
// in full.
func openSkipWindow(ctx context.Context, tx dbtx, r persistence.JobRun) error {
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO job_skips (job_id, window_ms, skipped) VALUES (?, ?, 0)`,
		r.JobID, r.Scheduled.UnixMilli()); err != nil {
		return fmt.Errorf("open skip window: %w", err)
	}
	return nil
}

// closeSkipWindow closes job's window, if one is open, writing what it
// counted as a job_runs_skipped event at time at.
func (s *Store) closeSkipWindow(ctx context.Context, tx dbtx, job string, at time.Time, node string) error {
	var (
		n           int64
		first, last sql.NullInt64
		reason      sql.NullString
	)
	err := tx.QueryRowContext(ctx, `DELETE FROM job_skips WHERE job_id = ? RETURNING skipped, first_ms, last_ms, reason`, job).
		Scan(&n, &first, &last, &reason)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("close skip window: %w", err)
	case n == 0:
		return nil
	}
	if at.IsZero() {
		at = time.Now()
	}
	d := map[string]any{"job": job, "skipped": n, "first": time.UnixMilli(first.Int64).UTC().Format(time.RFC3339),
		"last": time.UnixMilli(last.Int64).UTC().Format(time.RFC3339), "error": reason.String}
	return s.insertChained(ctx, tx, "events", eventArgs(persistence.EventJobRunsSkipped, at, node, "", d))
}
