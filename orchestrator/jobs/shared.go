package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// SharedJob is a job as a cluster's shared store holds it. Watermark is
// its base: when it was added or last resumed (its instants count from
// there).
type SharedJob struct {
	persistence.JobRecord
	// Deleted marks a removed job's tombstone.
	Deleted bool
	// Node and By are who changed it last.
	Node, By string
}

// SharedStore keeps the jobs made through the API or by the model for
// every node of a cluster (orchestrator/cluster, in sqld). The errors
// are ErrExists and ErrNoJob, as the scheduler's own.
type SharedStore interface {
	// AddJob stores a new job (ErrExists when a live one has its id).
	AddJob(ctx context.Context, j persistence.JobRecord, by string) error
	// PublishJob stores a job a node had before the cluster knew it,
	// unless the cluster has a row of its id, live or removed.
	PublishJob(ctx context.Context, j persistence.JobRecord, by string) (added bool, err error)
	DeleteJob(ctx context.Context, id, by string) error
	SetJobPaused(ctx context.Context, id string, paused bool, at time.Time, by string) error
	// SharedJobs returns every job and tombstone.
	SharedJobs(ctx context.Context) ([]SharedJob, error)
}

// syncTimeout bounds one read of the shared jobs.
const syncTimeout = 5 * time.Second

// shared reports whether job e is the cluster's: made through the API or
// by the model, with a shared store configured. Config jobs stay each
// node's own.
func (s *Scheduler) shared(source string) bool {
	return s.o.Shared != nil && source != SourceConfig
}

// sync makes this node's jobs agree with the shared store: a job added
// on another node (or while this node was down) is stored and loaded,
// a pause or resume is applied, a removed job is removed, and a job this
// node has that the cluster never knew is published. The caller holds
// opMu.
func (s *Scheduler) sync(ctx context.Context) error {
	if s.o.Shared == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	list, err := s.o.Shared.SharedJobs(ctx)
	if err != nil {
		return fmt.Errorf("sync jobs: %w", err)
	}
	now := s.o.Clock.Now()
	known := make(map[string]SharedJob, len(list))
	var errs []error
	for _, sj := range list {
		known[sj.ID] = sj
		if sj.Deleted {
			continue
		}
		if err := s.syncOne(ctx, sj, now); err != nil {
			errs = append(errs, err)
		}
	}
	for _, e := range s.snapshot() {
		if !s.shared(e.rec.Source) {
			continue
		}
		sj, ok := known[e.rec.ID]
		switch {
		case !ok:
			added, err := s.o.Shared.PublishJob(ctx, e.rec, "node "+s.o.Node)
			if err != nil {
				errs = append(errs, fmt.Errorf("publish job %q: %w", e.rec.ID, err))
			} else if added {
				s.log.Info("published a job of this node to the cluster", "job", e.rec.ID)
			}
		case sj.Deleted:
			if err := s.o.Store.DeleteJob(ctx, e.rec.ID, s.o.Node, clusterBy(sj)); err != nil {
				errs = append(errs, err)
				continue
			}
			s.mu.Lock()
			delete(s.jobs, e.rec.ID)
			s.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// clusterBy is who a change another node made is recorded as here.
func clusterBy(sj SharedJob) string {
	return sj.By + " via node " + sj.Node
}

// syncOne applies the shared job sj to this node.
func (s *Scheduler) syncOne(ctx context.Context, sj SharedJob, now time.Time) error {
	s.mu.Lock()
	e := s.jobs[sj.ID]
	s.mu.Unlock()
	if e != nil && e.rec.Source == SourceConfig {
		return nil // this node declares the id in its config: that one is run here
	}
	if e == nil || string(e.rec.Spec) != string(sj.Spec) {
		var spec Spec
		if err := json.Unmarshal(sj.Spec, &spec); err != nil {
			return fmt.Errorf("shared job %q: %w", sj.ID, err)
		}
		job, err := Compile(spec)
		if err != nil {
			return fmt.Errorf("shared job %q cannot be scheduled by this build: %w", sj.ID, err)
		}
		rec := persistence.JobRecord{ID: sj.ID, Source: sj.Source, Spec: sj.Spec, Paused: sj.Paused, Created: sj.Created, Updated: now}
		if e != nil {
			rec.Paused, rec.Watermark, rec.Created = e.rec.Paused, e.rec.Watermark, e.rec.Created
		} else {
			// New here: its instants count from when it was added or
			// resumed, but those beyond its window were the other nodes'
			// to decide (or nobody's): they are not recorded missed here.
			rec.Watermark = latest(sj.Watermark, now.Add(-job.window))
		}
		if _, err := s.o.Store.PutJob(ctx, rec, s.o.Node, clusterBy(sj)); err != nil {
			return err
		}
		e = &entry{job: job, rec: rec}
		s.mu.Lock()
		s.jobs[sj.ID] = e
		s.mu.Unlock()
		if e.rec.Paused == sj.Paused {
			return nil
		}
	}
	if e.rec.Paused == sj.Paused {
		return nil
	}
	at := sj.Updated
	if !sj.Paused {
		at = sj.Watermark // resumed then: what passed while paused is not run
	}
	if err := s.o.Store.SetJobPaused(ctx, sj.ID, sj.Paused, at, s.o.Node, clusterBy(sj)); err != nil {
		return err
	}
	s.mu.Lock()
	e.rec.Paused = sj.Paused
	if !sj.Paused && at.After(e.rec.Watermark) {
		e.rec.Watermark = at
	}
	s.mu.Unlock()
	return nil
}

// syncLogRepeat is how often a sync failure that persists is logged
// again (sqld unreachable: every tick fails the same way).
const syncLogRepeat = time.Minute

// syncLogged syncs and logs a failure: a new one at once, the same one
// again after syncLogRepeat. The caller holds opMu.
func (s *Scheduler) syncLogged(ctx context.Context) {
	err := s.sync(ctx)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		if s.syncErr != "" {
			s.log.Info("sync jobs with the cluster: working again")
		}
		s.syncErr = ""
		return
	}
	if err.Error() == s.syncErr && now.Sub(s.syncErrAt) < syncLogRepeat {
		return
	}
	s.syncErr, s.syncErrAt = err.Error(), now
	s.log.Warn("sync jobs with the cluster; the jobs this node has are planned meanwhile", "err", err)
}

// entryOrSync returns job id's entry, reading the shared jobs once when
// this node does not have it yet (added on another node moments ago).
// The caller holds opMu.
func (s *Scheduler) entryOrSync(ctx context.Context, id string) (*entry, error) {
	e, err := s.entry(id)
	if err == nil || s.o.Shared == nil {
		return e, err
	}
	s.syncLogged(ctx)
	return s.entry(id)
}
