package jobs

import (
	"errors"
	"fmt"
	"time"
)

// Bounds of the jobs the model makes (schedule_task). They run unattended,
// and every run, even one skipped or failed, is a job_runs row and an audit
// event: without a bound of their own, a model (or a prompt injected into
// it) could fill the node's 256 jobs with every-minute jobs of 64 agents
// each, which wrote 16 384 runs and events a minute, about 9 MB a minute,
// and left no room for the operator's jobs.
const (
	// MaxModelJobs bounds the jobs of source SourceModel a node holds.
	MaxModelJobs = 32
	// MaxModelRunsPerDay bounds the runs the model's jobs ask for
	// together (each instant once per agent), averaged over
	// modelRunWindow: one every five minutes.
	MaxModelRunsPerDay = 288
	// modelRunWindow is the span over which the runs are counted: a
	// month, so that a schedule busy only on some days (every minute of
	// the 1st) counts whole.
	modelRunWindow = 31 * 24 * time.Hour
)

// ErrModelLimit refuses a job of the model beyond MaxModelJobs or
// MaxModelRunsPerDay.
var ErrModelLimit = errors.New("the jobs made by the model are at their limit")

// modelRoom refuses job, a new job of the model, when the model's jobs
// with it would pass MaxModelJobs or MaxModelRunsPerDay from now. The
// caller holds opMu.
func (s *Scheduler) modelRoom(job *Job, now time.Time) error {
	budget := MaxModelRunsPerDay * int(modelRunWindow/(24*time.Hour))
	jobs := 0
	for _, e := range s.snapshot() {
		if e.rec.Source != SourceModel {
			continue
		}
		if jobs++; jobs >= MaxModelJobs {
			return fmt.Errorf("%w: %d jobs; an operator can remove some (evoclaw jobs remove)", ErrModelLimit, MaxModelJobs)
		}
		budget -= runsWithin(e.job, now, modelRunWindow, budget)
	}
	if n := runsWithin(job, now, modelRunWindow, budget+1); n > budget {
		return fmt.Errorf("%w: together they may run %d times a day (each instant once per agent); this job asks for more than the %d runs left in the next %d days: choose a sparser schedule or fewer agents",
			ErrModelLimit, MaxModelRunsPerDay, max(budget, 0), int(modelRunWindow/(24*time.Hour)))
	}
	return nil
}

// runsWithin counts the runs job asks for in (from, from+span]: each
// instant once per agent (once without agents). It stops counting past
// limit.
func runsWithin(job *Job, from time.Time, span time.Duration, limit int) int {
	per := max(len(job.Agents), 1)
	end := from.Add(span)
	n := 0
	for t := job.Next(from); !t.IsZero() && !t.After(end) && n <= limit; t = job.Next(t) {
		n += per
	}
	return n
}
