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
