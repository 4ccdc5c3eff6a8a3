package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// downShared is a cluster store that cannot be reached.
type downShared struct{ err error }

func (d downShared) AddJob(context.Context, persistence.JobRecord, string) error { return d.err }
func (d downShared) PublishJob(context.Context, persistence.JobRecord, string) (bool, error) {
	return false, d.err
}
func (d downShared) DeleteJob(context.Context, string, string) error { return d.err }
func (d downShared) SetJobPaused(context.Context, string, bool, time.Time, string) error {
	return d.err
}
func (d downShared) SharedJobs(context.Context) ([]SharedJob, error) { return nil, d.err }

// With the cluster's store unreachable a node still plans and runs the
// jobs it has (a tick does not fail on it), and an API change of a shared
// job fails whole: nothing changes on the node either. Config jobs never
// ask the cluster.
func TestSharedStoreDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	h.shared = downShared{err: errors.New("sqld unreachable")}
	h.start(morning)
	ctx := context.Background()
	j, err := DecodeSpec([]byte(`{"id": "evening", "schedule": "CRON_TZ=UTC 0 18 * * *", "prompt": "close the valve"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.s.Add(ctx, j, SourceAPI, "alice"); err == nil || !errors.Is(err, h.shared.(downShared).err) {
		t.Fatalf("add with the cluster down: %v", err)
	}
	if _, err := h.s.Get("evening"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("a job the cluster refused is on the node: %v", err)
	}
	if recs, err := h.store.Jobs(ctx); err != nil || len(recs) != 1 {
		t.Fatalf("stored jobs: %+v %v", recs, err)
	}
	if err := h.s.Pause(ctx, "morning", "alice"); err != nil {
		t.Fatalf("pause of a config job, the cluster down: %v", err)
	}
	if err := h.s.Resume(ctx, "morning", "alice"); err != nil {
		t.Fatal(err)
	}
	h.tick(t6.Add(time.Second))
	equal(t, "runs", h.outcomes("morning"), []string{"03-02T06:00 pi-1 succeeded schedule"})
}
