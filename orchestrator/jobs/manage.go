package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// Info is a job as listed: its definition and scheduling state.
type Info struct {
	Spec
	Source string `json:"source"`
	Paused bool   `json:"paused"`
	// Next is the next instant that will run (zero while paused).
	Next time.Time `json:"next,omitzero"`
	// Watermark is the newest instant already decided.
	Watermark time.Time `json:"watermark,omitzero"`
	// Running counts the job's runs in progress.
	Running int `json:"running"`
	// Error says why a stored job cannot be scheduled by this build (a
	// rule that came later refuses its definition): it never runs, and
	// can be removed. Empty for every other job.
	Error string `json:"error,omitempty"`
}

// List returns every job, by id, those that cannot be scheduled too.
func (s *Scheduler) List() []Info {
	now := s.o.Clock.Now()
	var out []Info
	for _, e := range s.snapshot() {
		out = append(out, s.info(e, now))
	}
	s.mu.Lock()
	for _, u := range s.unusable {
		out = append(out, Info{Spec: u.spec, Source: u.rec.Source, Paused: u.rec.Paused, Watermark: u.rec.Watermark,
			Error: ErrUnusable.Error() + ": " + u.err.Error()})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// info is job e as listed at now.
func (s *Scheduler) info(e *entry, now time.Time) Info {
	s.mu.Lock()
	in := Info{Spec: e.job.Spec, Source: e.rec.Source, Paused: e.rec.Paused, Watermark: e.rec.Watermark}
	for k := range s.running {
		if k.job == e.rec.ID {
			in.Running++
		}
	}
	s.mu.Unlock()
	if !in.Paused {
		in.Next = e.job.Next(latest(e.rec.Watermark, now))
	}
	return in
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Get returns job id.
func (s *Scheduler) Get(id string) (Info, error) {
	for _, in := range s.List() {
		if in.ID == id {
			return in, nil
		}
	}
	return Info{}, fmt.Errorf("%w: %q", ErrNoJob, id)
}

// Add stores and schedules a new job from the API or the model. Its first
// instant is the first after now. It returns the job as added: a Get
// after it may find no job, removed meanwhile by another request.
func (s *Scheduler) Add(ctx context.Context, job *Job, source, by string) (Info, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.usable(); err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	_, taken := s.jobs[job.ID]
	u := s.unusable[job.ID]
	s.mu.Unlock()
	if taken {
		return Info{}, fmt.Errorf("%w: %q", ErrExists, job.ID)
	}
	if u != nil {
		return Info{}, fmt.Errorf("%w: %q, stored but not scheduled (%v): remove it first", ErrExists, job.ID, u.err)
	}
	now := s.o.Clock.Now()
	if source == SourceModel {
		if err := s.modelRoom(job, now); err != nil {
			return Info{}, fmt.Errorf("add job %q: %w", job.ID, err)
		}
	}
	b, err := json.Marshal(job.Spec)
	if err != nil {
		return Info{}, fmt.Errorf("add job %q: %w", job.ID, err)
	}
	rec := persistence.JobRecord{ID: job.ID, Source: source, Spec: b, Paused: job.Paused, Created: now, Updated: now, Watermark: now}
	if s.shared(source) {
		// The cluster's first: its primary key refuses an id taken on
		// any node.
		if err := s.o.Shared.AddJob(ctx, rec, by); err != nil {
			return Info{}, fmt.Errorf("add job %q: %w", job.ID, err)
		}
	}
	added, err := s.o.Store.PutJob(ctx, rec, s.o.Node, by)
	if (err != nil || !added) && s.shared(source) {
		s.unshare(job.ID, by) // the cluster must not plan what this node refused
	}
	if err != nil {
		return Info{}, fmt.Errorf("add job %q: %w", job.ID, err)
	}
	if !added {
		return Info{}, fmt.Errorf("%w: %q (stored, not loaded: its definition cannot be scheduled by this build)", ErrExists, job.ID)
	}
	e := &entry{job: job, rec: rec}
	s.mu.Lock()
	s.jobs[job.ID] = e
	s.mu.Unlock()
	return s.info(e, now), nil
}

// Remove deletes a job made over the API or by the model. Its history
// stays.
func (s *Scheduler) Remove(ctx context.Context, id, by string) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	u := s.unusable[id]
	s.mu.Unlock()
	var rec persistence.JobRecord
	if u != nil {
		rec = u.rec // never run: nothing of it is planned or running
	} else {
		e, err := s.entryOrSync(ctx, id)
		if err != nil {
			return err
		}
		rec = e.rec
	}
	if rec.Source == SourceConfig {
		return fmt.Errorf("%w: %q: remove it from evoclaw.toml", ErrConfigJob, id)
	}
	if s.shared(rec.Source) {
		// A job the cluster no longer has (removed on another node a
		// moment ago) is removed here all the same.
		if err := s.o.Shared.DeleteJob(ctx, id, by); err != nil && !errors.Is(err, ErrNoJob) {
			return err
		}
	}
	if err := s.o.Store.DeleteJob(ctx, id, s.o.Node, by); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.jobs, id)
	delete(s.unusable, id)
	s.mu.Unlock()
	return nil
}

// Pause stops a job from running until Resume. A running run goes on.
// It returns the job as paused (see Add).
func (s *Scheduler) Pause(ctx context.Context, id, by string) (Info, error) {
	return s.setPaused(ctx, id, true, by)
}

// Resume schedules a paused job again from now: the instants that passed
// while it was paused are neither run nor recorded as missed. It returns
// the job as resumed (see Add).
func (s *Scheduler) Resume(ctx context.Context, id, by string) (Info, error) {
	return s.setPaused(ctx, id, false, by)
}

func (s *Scheduler) setPaused(ctx context.Context, id string, paused bool, by string) (Info, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	e, err := s.entryOrSync(ctx, id)
	if err != nil {
		return Info{}, err
	}
	now := s.o.Clock.Now()
	if s.shared(e.rec.Source) {
		// Written to the cluster even when this node's copy agrees: the
		// cluster's may not (changed on another node since the last sync).
		if err := s.o.Shared.SetJobPaused(ctx, id, paused, now, by); err != nil {
			return Info{}, err
		}
	}
	if e.rec.Paused == paused {
		return s.info(e, now), nil
	}
	if err := s.o.Store.SetJobPaused(ctx, id, paused, now, s.o.Node, by); err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	e.rec.Paused = paused
	if !paused && now.After(e.rec.Watermark) {
		e.rec.Watermark = now
	}
	s.mu.Unlock()
	return s.info(e, now), nil
}

// unshare removes a job just added to the cluster that this node could
// not store: the other nodes remove it at their next sync.
func (s *Scheduler) unshare(id, by string) {
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	if err := s.o.Shared.DeleteJob(ctx, id, by); err != nil {
		s.log.Error("remove a job from the cluster that this node could not store", "job", id, "err", err)
	}
}

// RunNow claims and starts a run of job id at the clock's time, for each
// of its agents, paused or not; the schedule is unchanged. It returns the
// runs as recorded: started, or skipped when one is still running.
func (s *Scheduler) RunNow(ctx context.Context, id string) ([]persistence.JobRun, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	now := s.o.Clock.Now()
	agents := e.job.Agents
	if len(agents) == 0 {
		agents = []string{""}
	}
	var runs []persistence.JobRun
	var start []int
	for _, a := range agents {
		r, ok := s.reserve(e, a, now, persistence.TriggerRunNow, now)
		if ok {
			start = append(start, len(runs))
		}
		runs = append(runs, r)
	}
	claimed, err := s.o.Store.RecordJobRuns(ctx, id, time.Time{}, runs)
	if err != nil {
		for _, i := range start {
			s.release(id, runs[i].AgentID)
		}
		return nil, fmt.Errorf("run job %q now: %w", id, err)
	}
	for _, i := range start {
		if !claimed[i] {
			s.release(id, runs[i].AgentID)
			runs[i].Outcome, runs[i].Error = persistence.OutcomeSkipped, "skipped: a run of this instant exists already"
			continue
		}
		s.launch(e.job, runs[i])
	}
	return runs, nil
}

// History returns the runs of job id (every job when empty), newest
// first, at most limit.
func (s *Scheduler) History(ctx context.Context, id string, limit int) ([]persistence.JobRun, error) {
	if id != "" {
		if _, err := s.entry(id); err != nil {
			// A removed job's history is still asked for by id.
			runs, herr := s.o.Store.JobRuns(ctx, id, limit)
			if herr != nil || len(runs) == 0 {
				return nil, err
			}
			return runs, nil
		}
	}
	return s.o.Store.JobRuns(ctx, id, limit)
}

func (s *Scheduler) entry(id string) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[id]
	if u := s.unusable[id]; !ok && u != nil {
		return nil, fmt.Errorf("%w: %q (%v): remove it", ErrUnusable, id, u.err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoJob, id)
	}
	return e, nil
}

func (s *Scheduler) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	return nil
}
