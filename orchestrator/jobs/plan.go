package jobs

import (
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// Bounds of one plan.
const (
	// MaxMissedRows is how many instants of one gap get a missed row of
	// their own; the oldest of them counts the rest (JobRun.Missed).
	MaxMissedRows = 24
	// maxScan bounds the instants one plan enumerates: a gap longer than
	// that (a minute schedule and a clock a month behind) is counted as
	// at least maxScan.
	maxScan = 100_000
	// lateAfter is how late a run may start and still be "schedule", not
	// "catch_up": a tick's jitter.
	lateAfter = 30 * time.Second
	// rescan is how far back the newest instants are looked for after a
	// capped scan; only schedules denser than one per 26 s can be capped.
	rescan = 48 * time.Hour
)

// Plan is what a job does at one tick: the rules, apart from any I/O.
type Plan struct {
	// Fire is the instant to run now; zero when none is due.
	Fire    time.Time
	Trigger string
	// Missed are passed instants recorded as missed, oldest first; the
	// first of them also stands for MissedBefore older ones.
	Missed       []time.Time
	MissedBefore int64
	// Watermark is the newest instant decided by this plan; zero when
	// nothing is due.
	Watermark time.Time
}

// Empty reports whether the plan does nothing.
func (p Plan) Empty() bool { return p.Watermark.IsZero() }

// PlanAt decides what job j does at now, given watermark, the newest
// instant already decided. Only instants after the watermark and at or
// before now are considered, so:
//
//   - an instant is decided once: run, or recorded missed;
//   - after downtime or a clock jumped forward, only the newest passed
//     instant may run (if it is within the job's window), never every one;
//     the others are recorded missed, at most MaxMissedRows rows;
//   - after the clock went backwards, nothing already decided comes again:
//     the job waits until the clock passes its watermark.
func PlanAt(j *Job, watermark, now time.Time) Plan {
	var ring []time.Time // the newest MaxMissedRows+1 instants, oldest first
	scan := func(from time.Time) (n int64, capped bool) {
		for t := j.Next(from); !t.IsZero() && !t.After(now); t = j.Next(t) {
			n++
			ring = append(ring, t)
			if len(ring) > MaxMissedRows+1 {
				ring = ring[1:]
			}
			if n >= maxScan {
				return n, true
			}
		}
		return n, false
	}
	total, capped := scan(watermark)
	if capped {
		// A dense schedule and a long gap: count what was scanned (a lower
		// bound) and find the newest instants from a recent start.
		ring = ring[:0]
		n, _ := scan(now.Add(-rescan))
		total += n
	}
	if total == 0 {
		return Plan{}
	}
	last := ring[len(ring)-1]
	p := Plan{Watermark: last}
	if now.Sub(last) <= j.window {
		p.Fire, p.Trigger = last, persistence.TriggerSchedule
		if now.Sub(last) > lateAfter || total > 1 {
			p.Trigger = persistence.TriggerCatchUp
		}
		ring = ring[:len(ring)-1]
	} else if len(ring) > MaxMissedRows {
		ring = ring[1:]
	}
	p.Missed = ring
	p.MissedBefore = total - int64(len(ring))
	if !p.Fire.IsZero() {
		p.MissedBefore--
	}
	return p
}
