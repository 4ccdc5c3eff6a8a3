package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// sharedJobsSchema is the jobs made through any node's API or by the
// model, which every node loads and plans: their definition, their pause
// state, and since when their instants count (base_ms: when the job was
// added or last resumed). A removed job stays as a tombstone (deleted_ms
// set) for a while, so a node that was down when it was removed removes
// its own copy rather than publishing it again.
const sharedJobsSchema = `CREATE TABLE IF NOT EXISTS cluster_jobs (
	job_id TEXT PRIMARY KEY,
	source TEXT NOT NULL,
	spec TEXT NOT NULL,
	paused INTEGER NOT NULL,
	created_ms INTEGER NOT NULL,
	updated_ms INTEGER NOT NULL,
	base_ms INTEGER NOT NULL,
	deleted_ms INTEGER,
	node TEXT NOT NULL,
	changed_by TEXT NOT NULL
)`

// Bounds of cluster_jobs. The live jobs are bounded as a node's own
// (sqlite.MaxJobs); the tombstones by age and by count.
const (
	// TombstoneKeep is how long a removed job's tombstone is kept: a node
	// down longer than that publishes its copy of the job again.
	TombstoneKeep = 30 * 24 * time.Hour
	// MaxTombstones bounds the tombstones; the oldest go first.
	MaxTombstones = 1024
)

var _ jobs.SharedStore = (*SharedHistory)(nil)

// AddJob stores a new job for the whole cluster; jobs.ErrExists when a
// live job has its id, sqlite.ErrTooManyJobs when the cluster holds
// sqlite.MaxJobs live jobs. A tombstone of the same id is replaced.
func (h *SharedHistory) AddJob(ctx context.Context, j persistence.JobRecord, by string) error {
	added, err := h.putJob(ctx, j, by, true)
	if err == nil && !added {
		err = fmt.Errorf("%w: %q (in the cluster)", jobs.ErrExists, j.ID)
	}
	return err
}

// PublishJob stores a job a node had before the cluster knew it (made
// before [cluster] state_url was set, or kept across a new state
// database), unless the cluster has a row of that id, live or removed;
// added reports whether it was stored.
func (h *SharedHistory) PublishJob(ctx context.Context, j persistence.JobRecord, by string) (added bool, err error) {
	return h.putJob(ctx, j, by, false)
}

// putJob inserts j unless a live job has its id, or a tombstone has it
// and overTombstone is false.
func (h *SharedHistory) putJob(ctx context.Context, j persistence.JobRecord, by string, overTombstone bool) (added bool, err error) {
	if j.ID == "" || len(j.Spec) == 0 {
		return false, errors.New("cluster state: a job needs an id and a definition")
	}
	if err := h.ensureSchema(ctx); err != nil {
		return false, err
	}
	err = retryBusy(ctx, func() error {
		var err error
		added, err = h.putJobOnce(ctx, j, by, overTombstone)
		return err
	})
	if err != nil && !errors.Is(err, sqlite.ErrTooManyJobs) {
		return false, fmt.Errorf("cluster state: add job %s: %w", j.ID, err)
	}
	return added, err
}

func (h *SharedHistory) putJobOnce(ctx context.Context, j persistence.JobRecord, by string, overTombstone bool) (added bool, err error) {
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil || !added {
			_ = tx.Rollback()
		}
	}()
	var deleted sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT deleted_ms FROM cluster_jobs WHERE job_id = ?`, j.ID).Scan(&deleted)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case !deleted.Valid || !overTombstone:
		return false, nil // a live job has the id, or a removed one
	}
	var live int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM cluster_jobs WHERE deleted_ms IS NULL`).Scan(&live); err != nil {
		return false, err
	}
	if live >= sqlite.MaxJobs {
		return false, fmt.Errorf("%w: the cluster keeps at most %d jobs made through the API or by the model", sqlite.ErrTooManyJobs, sqlite.MaxJobs)
	}
	now := time.Now()
	created, base := orNow(j.Created, now), orNow(j.Watermark, now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO cluster_jobs (job_id, source, spec, paused, created_ms, updated_ms, base_ms, deleted_ms, node, changed_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)
		ON CONFLICT (job_id) DO UPDATE SET source = excluded.source, spec = excluded.spec, paused = excluded.paused,
			created_ms = excluded.created_ms, updated_ms = excluded.updated_ms, base_ms = excluded.base_ms, deleted_ms = NULL,
			node = excluded.node, changed_by = excluded.changed_by`,
		j.ID, j.Source, string(j.Spec), j.Paused, created.UnixMilli(), now.UnixMilli(), base.UnixMilli(), h.node, by); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return true, nil
}

func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// DeleteJob removes job id from the cluster, leaving its tombstone;
// jobs.ErrNoJob when the cluster has no live job of that id. Tombstones
// older than TombstoneKeep, and beyond the newest MaxTombstones, are
// deleted with it.
func (h *SharedHistory) DeleteJob(ctx context.Context, id, by string) error {
	if err := h.ensureSchema(ctx); err != nil {
		return err
	}
	now := time.Now()
	var n int64
	err := retryBusy(ctx, func() error {
		res, err := h.db.ExecContext(ctx, `UPDATE cluster_jobs SET deleted_ms = ?, updated_ms = ?, node = ?, changed_by = ?
			WHERE job_id = ? AND deleted_ms IS NULL`, now.UnixMilli(), now.UnixMilli(), h.node, by, id)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster state: remove job %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q (in the cluster)", jobs.ErrNoJob, id)
	}
	// Bounded: a failure here is left to the next removal.
	_, _ = h.db.ExecContext(ctx, `DELETE FROM cluster_jobs WHERE deleted_ms IS NOT NULL AND (deleted_ms < ? OR job_id NOT IN
		(SELECT job_id FROM cluster_jobs WHERE deleted_ms IS NOT NULL ORDER BY deleted_ms DESC, job_id LIMIT ?))`,
		now.Add(-TombstoneKeep).UnixMilli(), MaxTombstones)
	return nil
}

// SetJobPaused pauses or resumes job id for the whole cluster at the
// instant at; resuming moves the job's base to at (the instants that
// passed while it was paused are not run). jobs.ErrNoJob when the cluster
// has no live job of that id.
func (h *SharedHistory) SetJobPaused(ctx context.Context, id string, paused bool, at time.Time, by string) error {
	if err := h.ensureSchema(ctx); err != nil {
		return err
	}
	var n int64
	err := retryBusy(ctx, func() error {
		res, err := h.db.ExecContext(ctx, `UPDATE cluster_jobs SET paused = ?, updated_ms = ?, node = ?, changed_by = ?,
			base_ms = CASE WHEN ? THEN base_ms ELSE max(base_ms, ?) END
			WHERE job_id = ? AND deleted_ms IS NULL`, paused, at.UnixMilli(), h.node, by, paused, at.UnixMilli(), id)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster state: set job %s paused=%t: %w", id, paused, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q (in the cluster)", jobs.ErrNoJob, id)
	}
	return nil
}

// SharedJobs returns the cluster's jobs and tombstones, by id: at most
// sqlite.MaxJobs live jobs and MaxTombstones tombstones.
func (h *SharedHistory) SharedJobs(ctx context.Context) ([]jobs.SharedJob, error) {
	if err := h.ensureSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := h.db.QueryContext(ctx, `SELECT job_id, source, spec, paused, created_ms, updated_ms, base_ms, deleted_ms, node, changed_by
		FROM cluster_jobs ORDER BY job_id LIMIT ?`, sqlite.MaxJobs+MaxTombstones+1)
	if err != nil {
		return nil, fmt.Errorf("cluster state: jobs: %w", err)
	}
	defer rows.Close()
	var out []jobs.SharedJob
	for rows.Next() {
		var (
			j                      jobs.SharedJob
			spec                   string
			created, updated, base int64
			deleted                sql.NullInt64
		)
		if err := rows.Scan(&j.ID, &j.Source, &spec, &j.Paused, &created, &updated, &base, &deleted, &j.Node, &j.By); err != nil {
			return nil, fmt.Errorf("cluster state: jobs: %w", err)
		}
		j.Spec = []byte(spec)
		j.Created, j.Updated, j.Watermark = time.UnixMilli(created), time.UnixMilli(updated), time.UnixMilli(base)
		j.Deleted = deleted.Valid
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster state: jobs: %w", err)
	}
	if len(out) > sqlite.MaxJobs+MaxTombstones {
		return nil, fmt.Errorf("cluster state: more than %d rows in cluster_jobs", sqlite.MaxJobs+MaxTombstones)
	}
	return out, nil
}
