package jobs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
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
	if _, err := h.s.Add(ctx, j, SourceAPI, "alice"); err == nil || !errors.Is(err, h.shared.(downShared).err) {
		t.Fatalf("add with the cluster down: %v", err)
	}
	if _, err := h.s.Get("evening"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("a job the cluster refused is on the node: %v", err)
	}
	if recs, err := h.store.Jobs(ctx); err != nil || len(recs) != 1 {
		t.Fatalf("stored jobs: %+v %v", recs, err)
	}
	if _, err := h.s.Pause(ctx, "morning", "alice"); err != nil {
		t.Fatalf("pause of a config job, the cluster down: %v", err)
	}
	if _, err := h.s.Resume(ctx, "morning", "alice"); err != nil {
		t.Fatal(err)
	}
	h.tick(t6.Add(time.Second))
	equal(t, "runs", h.outcomes("morning"), []string{"03-02T06:00 pi-1 succeeded schedule"})
}

// memShared is a cluster store in memory that records removals.
type memShared struct {
	downShared
	jobs    map[string]persistence.JobRecord
	removed []string
}

func (m *memShared) AddJob(_ context.Context, j persistence.JobRecord, _ string) error {
	if _, ok := m.jobs[j.ID]; ok {
		return ErrExists
	}
	m.jobs[j.ID] = j
	return nil
}

func (m *memShared) DeleteJob(_ context.Context, id, _ string) error {
	delete(m.jobs, id)
	m.removed = append(m.removed, id)
	return nil
}

func (m *memShared) SharedJobs(context.Context) ([]SharedJob, error) {
	var out []SharedJob
	for _, j := range m.jobs {
		out = append(out, SharedJob{JobRecord: j})
	}
	return out, nil
}

// A job the cluster took but this node cannot store (its own table is
// full) is taken back from the cluster: no other node plans it.
func TestSharedAddRefusedHereIsUnshared(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t6.Add(-time.Hour))
	ctx := context.Background()
	for i := range sqlite.MaxJobs {
		id := fmt.Sprintf("local-%d", i)
		if _, err := h.store.PutJob(ctx, persistence.JobRecord{ID: id, Source: SourceAPI, Spec: []byte(`{}`)}, "n1", "test"); err != nil {
			t.Fatal(err)
		}
	}
	m := &memShared{jobs: map[string]persistence.JobRecord{}}
	h.shared = m
	h.start()
	j, err := DecodeSpec([]byte(`{"id": "evening", "schedule": "CRON_TZ=UTC 0 18 * * *", "prompt": "close the valve"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Add(ctx, j, SourceAPI, "alice"); !errors.Is(err, sqlite.ErrTooManyJobs) {
		t.Fatalf("add with this node's table full: %v", err)
	}
	if len(m.jobs) != 0 || fmt.Sprint(m.removed) != "[evening]" {
		t.Fatalf("the cluster keeps %v, removed %v; want evening removed", m.jobs, m.removed)
	}
}
