package jobs

import (
	"time"

	"github.com/robfig/cron/v3"
)

// starBit marks a cron field written "*" (the library's own mark).
const starBit = 1 << 63

// wallClock is a cron schedule of set hours ("30 2 * * *", @daily) read
// as cron reads one across a daylight saving change: a wall-clock time
// that occurs twice (the clock set back) runs once, at its first
// occurrence, and one that does not occur (the clock set forward) runs at
// the change, once however many of its times the change skipped. The
// library alone ran "30 2 * * *" in Berlin twice on the last Sunday of
// October and not at all on the last Sunday of March. Schedules of every
// hour ("0 * * * *", "*/15 * * * *") follow the real time and are not
// wrapped: their runs stay the interval apart.
type wallClock struct {
	spec *cron.SpecSchedule
	utc  *cron.SpecSchedule // spec read in UTC: whether a wall-clock time matches
}

// dstSafe wraps s in wallClock when it is a cron schedule of set hours.
func dstSafe(s cron.Schedule) cron.Schedule {
	spec, ok := s.(*cron.SpecSchedule)
	if !ok || spec.Hour&starBit != 0 || spec.Location == nil {
		return s
	}
	utc := *spec
	utc.Location = time.UTC
	return wallClock{spec: spec, utc: &utc}
}

// Next is the first instant after t.
func (w wallClock) Next(t time.Time) time.Time {
	for {
		n := w.spec.Next(t)
		if n.IsZero() {
			return n
		}
		if change, ok := w.skipped(t, n); ok {
			return change
		}
		if !w.repeated(n) {
			return n
		}
		t = n
	}
}

// repeated reports whether n's wall-clock time occurred before, within
// the shifts daylight saving makes (30 minutes on Lord Howe Island, an
// hour elsewhere, two in the past): n is its second occurrence.
func (w wallClock) repeated(n time.Time) bool {
	wall := n.In(w.spec.Location)
	for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		if e := n.Add(-d).In(w.spec.Location); e.Year() == wall.Year() && e.YearDay() == wall.YearDay() &&
			e.Hour() == wall.Hour() && e.Minute() == wall.Minute() && e.Second() == wall.Second() {
			return true
		}
	}
	return false
}

// skipped returns the instant the clock was set forward, between t and
// n, when the wall-clock times it skipped hold one of the schedule's.
func (w wallClock) skipped(t, n time.Time) (time.Time, bool) {
	_, before := t.In(w.spec.Location).Zone()
	_, after := n.In(w.spec.Location).Zone()
	if after <= before {
		return time.Time{}, false
	}
	// The change: the first second of the new offset (to the second, as
	// the time zone database writes them).
	lo, hi := t.Unix(), n.Unix()
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, off := time.Unix(mid, 0).In(w.spec.Location).Zone(); off == before {
			lo = mid
		} else {
			hi = mid
		}
	}
	change := time.Unix(hi, 0).In(t.Location())
	// The skipped wall-clock times, as UTC times of the same fields.
	from := time.Unix(hi+int64(before), 0).UTC()
	to := from.Add(time.Duration(after-before) * time.Second)
	for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		if !m.Before(from) && w.utc.Next(m.Add(-time.Second)).Equal(m) {
			return change, change.After(t)
		}
	}
	return time.Time{}, false
}
