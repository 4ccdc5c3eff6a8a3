package cluster

import (
	"context"
	"fmt"
	"time"
)

// jobClaimsSchema is the claim of each scheduled run of a job: the
// nodes that declare a job all plan its instants, and the one whose
// INSERT the primary key takes records and carries out the run.
const jobClaimsSchema = `CREATE TABLE IF NOT EXISTS cluster_job_runs (
	job_id TEXT NOT NULL,
	scheduled_ms INTEGER NOT NULL,
	agent_id TEXT NOT NULL,
	node TEXT NOT NULL,
	claimed_ns INTEGER NOT NULL,
	PRIMARY KEY (job_id, scheduled_ms, agent_id)
)`

// Bounds of the claims kept.
const (
	// MinClaimKeep is the least time a claim is kept: a node may plan an
	// instant as late as the job's catch-up window, so a claim is kept
	// at least that long plus this.
	MinClaimKeep = time.Hour
	// pruneEvery is how often one node deletes a job's old claims.
	pruneEvery = time.Minute
)

// ClaimJobRun claims the run of job at the instant at (for agent, "" when
// the job names none) for this node, and reports whether this node holds
// it: it just claimed it, or claimed it before (a retry; the node's own
// job store keeps it from running twice). window is how late the job's
// runs may start; claims older than window+MinClaimKeep are deleted, so
// the table holds about that span of each job's instants.
func (h *SharedHistory) ClaimJobRun(ctx context.Context, job, agent string, at time.Time, window time.Duration) (bool, error) {
	if err := h.ensureSchema(ctx); err != nil {
		return false, err
	}
	now := time.Now()
	var holder string
	err := retryBusy(ctx, func() error {
		if _, err := h.db.ExecContext(ctx, `INSERT INTO cluster_job_runs (job_id, scheduled_ms, agent_id, node, claimed_ns) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (job_id, scheduled_ms, agent_id) DO NOTHING`, job, at.UnixMilli(), agent, h.node, now.UnixNano()); err != nil {
			return err
		}
		return h.db.QueryRowContext(ctx, `SELECT node FROM cluster_job_runs WHERE job_id = ? AND scheduled_ms = ? AND agent_id = ?`,
			job, at.UnixMilli(), agent).Scan(&holder)
	})
	if err != nil {
		return false, fmt.Errorf("cluster state: claim run of job %s at %s: %w", job, at.UTC().Format(time.RFC3339), err)
	}
	h.pruneClaims(ctx, job, now.Add(-window-MinClaimKeep))
	return holder == h.node, nil
}

// pruneClaims deletes job's claims of instants before cutoff, at most
// once per pruneEvery from this node; a failure is left to the next time.
func (h *SharedHistory) pruneClaims(ctx context.Context, job string, cutoff time.Time) {
	now := time.Now()
	h.pruneMu.Lock()
	if h.pruned == nil {
		h.pruned = map[string]time.Time{}
	}
	if now.Sub(h.pruned[job]) < pruneEvery {
		h.pruneMu.Unlock()
		return
	}
	h.pruned[job] = now
	if len(h.pruned) > maxPrunedJobs {
		clear(h.pruned) // bounded: forgetting only prunes again sooner
		h.pruned[job] = now
	}
	h.pruneMu.Unlock()
	_, _ = h.db.ExecContext(ctx, `DELETE FROM cluster_job_runs WHERE job_id = ? AND scheduled_ms < ?`, job, cutoff.UnixMilli())
}

// maxPrunedJobs bounds the jobs whose last prune is remembered.
const maxPrunedJobs = 4096
