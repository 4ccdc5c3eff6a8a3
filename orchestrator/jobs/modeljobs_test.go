package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestModelJobsAreBounded: the jobs the model makes are bounded in number
// and in the runs they ask for together, so a model cannot make the node
// write thousands of runs and events a minute, nor take the operator's
// room; the operator's jobs are not counted against it.
func TestModelJobsAreBounded(t *testing.T) {
	t.Parallel()
	spec := func(id, schedule string, agents int) *Job {
		t.Helper()
		var names []string
		for i := range agents {
			names = append(names, fmt.Sprintf("pi-%d", i))
		}
		j, err := Compile(Spec{ID: id, Schedule: schedule, Prompt: "p", Agents: names})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	for _, c := range []struct {
		name string
		// before are the model's jobs already made (all must be added).
		before []*Job
		job    *Job
		ok     bool
	}{
		{"a daily job", nil, spec("daily", "CRON_TZ=UTC 0 6 * * *", 0), true},
		{"every minute", nil, spec("busy", "* * * * *", 0), false},
		{"every minute, 64 agents", nil, spec("busy", "* * * * *", 64), false},
		{"daily, 64 agents", nil, spec("fleet", "0 6 * * *", 64), true},
		{"every 5 minutes: the whole budget", nil, spec("five", "*/5 * * * *", 0), true},
		{"nothing left after the whole budget", []*Job{spec("five", "*/5 * * * *", 0)}, spec("daily", "0 6 * * *", 0), false},
		{"hourly, 4 agents, beside 2 others", []*Job{spec("h1", "@hourly", 4), spec("h2", "@hourly", 2)}, spec("h3", "@hourly", 4), true},
		{"hourly, 4 agents, beside 3 others", []*Job{spec("h1", "@hourly", 4), spec("h2", "@hourly", 4), spec("h3", "@hourly", 4)}, spec("h4", "@hourly", 1), false},
		{"busy on one day a month, 8 agents", nil, spec("first", "CRON_TZ=UTC * * 3 * *", 8), false},
		{"one more than the most jobs", manyDaily(MaxModelJobs), spec("last", "@weekly", 0), false},
		{"the most jobs", manyDaily(MaxModelJobs - 1), spec("last", "@weekly", 0), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, t6)
			h.start()
			ctx := context.Background()
			for _, j := range c.before {
				if _, err := h.s.Add(ctx, j, SourceModel, "model"); err != nil {
					t.Fatal(err)
				}
			}
			_, err := h.s.Add(ctx, c.job, SourceModel, "model")
			if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrModelLimit)) {
				t.Fatalf("add %s %q: err = %v, want ok = %v", c.job.ID, c.job.Schedule, err, c.ok)
			}
			// The operator's jobs are not the model's.
			if _, err := h.s.Add(ctx, spec("operator", "* * * * *", 64), SourceAPI, "alice"); err != nil {
				t.Fatalf("operator's job: %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), "limit") {
				t.Fatalf("refusal does not say why: %v", err)
			}
		})
	}
}

func manyDaily(n int) []*Job {
	out := make([]*Job, n)
	for i := range out {
		j, err := Compile(Spec{ID: fmt.Sprintf("d%d", i), Schedule: "0 6 * * *", Prompt: "p"})
		if err != nil {
			panic(err)
		}
		out[i] = j
	}
	return out
}
