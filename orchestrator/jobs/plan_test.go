package jobs

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

func mustCompile(t testing.TB, s Spec) *Job {
	t.Helper()
	if s.ID == "" {
		s.ID = "j"
	}
	if s.Prompt == "" {
		s.Prompt = "check"
	}
	j, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

var t6 = time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)

func TestPlanAt(t *testing.T) {
	t.Parallel()
	daily := mustCompile(t, Spec{Schedule: "CRON_TZ=UTC 0 6 * * *"})
	hourly := mustCompile(t, Spec{Schedule: "@every 1h", CatchUpWindow: "90m"})
	skip := mustCompile(t, Spec{Schedule: "CRON_TZ=UTC 0 6 * * *", Missed: MissedSkip})
	minutely := mustCompile(t, Spec{Schedule: "* * * * *", Missed: MissedSkip})
	tests := []struct {
		name          string
		job           *Job
		wm, now       time.Time
		fire          time.Time
		trigger       string
		missed        int
		missedBefore  int64
		wantWatermark time.Time
	}{
		{name: "before the instant", job: daily, wm: t6.Add(-time.Hour), now: t6.Add(-time.Second)},
		{name: "on time", job: daily, wm: t6.Add(-time.Hour), now: t6.Add(time.Second), fire: t6,
			trigger: persistence.TriggerSchedule, wantWatermark: t6},
		{name: "late within the window", job: daily, wm: t6.Add(-time.Hour), now: t6.Add(20 * time.Minute), fire: t6,
			trigger: persistence.TriggerCatchUp, wantWatermark: t6},
		{name: "late beyond the window", job: daily, wm: t6.Add(-time.Hour), now: t6.Add(2 * time.Hour), missed: 1,
			wantWatermark: t6},
		{name: "skip policy, late", job: skip, wm: t6.Add(-time.Hour), now: t6.Add(2 * time.Minute), missed: 1, wantWatermark: t6},
		{name: "skip policy, within grace", job: skip, wm: t6.Add(-time.Hour), now: t6.Add(40 * time.Second), fire: t6,
			trigger: persistence.TriggerCatchUp, wantWatermark: t6},
		{name: "three days down", job: daily, wm: t6.Add(-time.Hour), now: t6.Add(48*time.Hour + 10*time.Minute),
			fire: t6.Add(48 * time.Hour), trigger: persistence.TriggerCatchUp, missed: 2, wantWatermark: t6.Add(48 * time.Hour)},
		{name: "clock jumped six hours forward", job: hourly, wm: t6, now: t6.Add(6*time.Hour + 5*time.Minute),
			fire: t6.Add(6 * time.Hour), trigger: persistence.TriggerCatchUp, missed: 5, wantWatermark: t6.Add(6 * time.Hour)},
		{name: "clock set back", job: hourly, wm: t6, now: t6.Add(-3 * time.Hour)},
		{name: "clock set back, at the watermark", job: hourly, wm: t6, now: t6},
		{name: "a long gap is bounded", job: minutely, wm: t6, now: t6.Add(10*time.Hour + 30*time.Second), fire: t6.Add(10 * time.Hour),
			trigger: persistence.TriggerCatchUp, missed: MaxMissedRows, missedBefore: 600 - 1 - MaxMissedRows, wantWatermark: t6.Add(10 * time.Hour)},
		{name: "a long gap, nothing in the window", job: daily, wm: t6, now: t6.Add(40*24*time.Hour + 2*time.Hour),
			missed: MaxMissedRows, missedBefore: 40 - MaxMissedRows, wantWatermark: t6.Add(40 * 24 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanAt(tt.job, tt.wm, tt.now)
			if !p.Fire.Equal(tt.fire) || p.Trigger != tt.trigger || len(p.Missed) != tt.missed ||
				p.MissedBefore != tt.missedBefore || !p.Watermark.Equal(tt.wantWatermark) {
				t.Fatalf("got fire %v %q, %d missed (+%d before), watermark %v", p.Fire, p.Trigger, len(p.Missed), p.MissedBefore, p.Watermark)
			}
			for i := 1; i < len(p.Missed); i++ {
				if !p.Missed[i].After(p.Missed[i-1]) || !p.Missed[i].Before(latest(p.Fire, p.Watermark.Add(time.Nanosecond))) {
					t.Fatalf("missed not in order: %v", p.Missed)
				}
			}
		})
	}
}

// A capped scan still finds the newest instants.
func TestPlanAtCapped(t *testing.T) {
	t.Parallel()
	j := mustCompile(t, Spec{Schedule: "* * * * *"})
	now := t6.Add(200 * 24 * time.Hour)
	p := PlanAt(j, t6, now)
	if !p.Fire.Equal(now.Truncate(time.Minute)) || len(p.Missed) != MaxMissedRows || p.MissedBefore < maxScan-MaxMissedRows {
		t.Fatalf("capped: fire %v, %d missed, %d before", p.Fire, len(p.Missed), p.MissedBefore)
	}
}

func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []Spec{
		{ID: "", Schedule: "@daily", Prompt: "p"},
		{ID: "a b", Schedule: "@daily", Prompt: "p"},
		{ID: "j", Schedule: "61 * * * *", Prompt: "p"},
		{ID: "j", Schedule: "30 2 31 2 *", Prompt: "p"},
		{ID: "j", Schedule: "@every 10s", Prompt: "p"},
		{ID: "j", Schedule: "* * * * * *", Prompt: "p"},
		{ID: "j", Schedule: "@daily", Prompt: " "},
		{ID: "j", Schedule: "@daily", Prompt: "p", Timeout: "forever"},
		{ID: "j", Schedule: "@daily", Prompt: "p", Missed: "maybe"},
		{ID: "j", Schedule: "@daily", Prompt: "p", Missed: MissedSkip, CatchUpWindow: "1h"},
		{ID: "j", Schedule: "@daily", Prompt: "p", Agents: []string{"pi 1"}},
		{ID: "j", Schedule: "CRON_TZ=Nowhere/Void 0 6 * * *", Prompt: "p"},
	} {
		if _, err := Compile(s); err == nil {
			t.Errorf("Compile(%+v) accepted", s)
		}
	}
}
