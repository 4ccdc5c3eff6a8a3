package jobs

import (
	"strings"
	"testing"
	"time"
)

// TestScheduleEdges: a schedule runs as often as it says or is refused
// when it is added. Before, a zone prefix let "@every 1s" past the
// one-minute floor (a node ran a conversation every second), with
// instants counted from each run rather than whole multiples of the
// interval, and a step larger than its field's range ("*/100000" of the
// minutes) was read as the range's first value: every hour.
func TestScheduleEdges(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 29, 19, 7, 30, 0, time.UTC) // a Sunday
	for _, tc := range []struct {
		schedule string
		wantErr  string    // in the error; empty: accepted
		next     time.Time // the first instant after from, when accepted
	}{
		{"TZ=UTC @every 1s", "at least 1m0s", time.Time{}},
		{"CRON_TZ=Europe/Berlin @every 1ns", "at least 1m0s", time.Time{}},
		{"CRON_TZ=UTC   @every 1m0.5s", "whole seconds", time.Time{}},
		{"CRON_TZ=Nowhere/Void @every 1h", "time zone", time.Time{}},
		{"CRON_TZ=UTC @every 15m", "", time.Date(2026, 11, 29, 19, 15, 0, 0, time.UTC)},
		{"*/100000 * * * *", "larger than its range 0-59", time.Time{}},
		{"*/60 * * * *", "larger than its range 0-59", time.Time{}},
		{"30/30 * * * *", "larger than its range 30-59", time.Time{}},
		{"0 */24 * * *", "larger than its range 0-23", time.Time{}},
		{"0 0 */31 * *", "larger than its range 1-31", time.Time{}},
		{"0 0 1 jan-mar/3 *", "larger than its range 1-3", time.Time{}},
		{"0 0 * * 1-5/5", "larger than its range 1-5", time.Time{}},
		{"*/59 * * * *", "", time.Date(2026, 11, 29, 19, 59, 0, 0, time.UTC)},
		{"0 0 1 */6 *", "", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 * * mon-fri/2", "", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
		{"CRON_TZ=UTC 0 12 * * *", "", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)},
	} {
		sched, err := ParseSchedule(tc.schedule)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one with %q", tc.schedule, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.schedule, err)
		case tc.wantErr == "":
			if next := sched.Next(from); !next.Equal(tc.next) {
				t.Errorf("%q: next after %v is %v, want %v", tc.schedule, from, next, tc.next)
			}
		}
	}
}

// TestDaylightSavingRunsOnce: a schedule of set hours runs once a day
// across daylight saving changes: a wall-clock time the clock passes twice
// (set back) runs at its first occurrence only, and times the clock skips
// (set forward) run once, at the change; schedules of every hour follow
// the real time. Before, "30 2 * * *" in Berlin ran twice on 25 October
// 2026 and not at all on 29 March.
func TestDaylightSavingRunsOnce(t *testing.T) {
	t.Parallel()
	utc := func(mon time.Month, day, h, m int) time.Time { return time.Date(2026, mon, day, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		schedule string
		from     time.Time
		want     []time.Time // the instants after from, in UTC
	}{
		// Berlin: 29 March 02:00 CET becomes 03:00 CEST (01:00Z).
		{"CRON_TZ=Europe/Berlin 30 2 * * *", utc(3, 28, 0, 0), []time.Time{utc(3, 28, 1, 30), utc(3, 29, 1, 0), utc(3, 30, 0, 30)}},
		// Berlin: 25 October 03:00 CEST becomes 02:00 CET (01:00Z).
		{"CRON_TZ=Europe/Berlin 30 2 * * *", utc(10, 24, 0, 0), []time.Time{utc(10, 24, 0, 30), utc(10, 25, 0, 30), utc(10, 26, 1, 30)}},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", utc(3, 28, 0, 0), []time.Time{utc(3, 28, 2, 0), utc(3, 29, 1, 0), utc(3, 30, 1, 0)}},
		{"CRON_TZ=Europe/Berlin */30 * * * *", utc(10, 25, 0, 0), []time.Time{utc(10, 25, 0, 30), utc(10, 25, 1, 0), utc(10, 25, 1, 30)}},
		// New York: 8 March 02:00 EST becomes 03:00 EDT (07:00Z); 1
		// November 02:00 EDT becomes 01:00 EST (06:00Z).
		{"CRON_TZ=America/New_York 0,30 2 * * *", utc(3, 7, 12, 0), []time.Time{utc(3, 8, 7, 0), utc(3, 9, 6, 0), utc(3, 9, 6, 30)}},
		{"CRON_TZ=America/New_York 30 1 * * *", utc(10, 31, 12, 0), []time.Time{utc(11, 1, 5, 30), utc(11, 2, 6, 30)}},
		// Lord Howe Island: 4 October 02:00 +10:30 becomes 02:30 +11
		// (3 October 15:30Z).
		{"CRON_TZ=Australia/Lord_Howe 15 2 * * *", utc(10, 2, 0, 0), []time.Time{utc(10, 2, 15, 45), utc(10, 3, 15, 30), utc(10, 4, 15, 15)}},
	} {
		sched, err := ParseSchedule(tc.schedule)
		if err != nil {
			t.Fatal(err)
		}
		n := tc.from
		for i, want := range tc.want {
			if n = sched.Next(n); !n.Equal(want) {
				t.Errorf("%q from %v: instant %d is %v, want %v", tc.schedule, tc.from, i, n.UTC(), want)
				break
			}
		}
	}
}
