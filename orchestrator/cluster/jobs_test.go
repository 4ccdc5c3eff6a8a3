package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

func openShared(t *testing.T, url, node string) *SharedHistory {
	t.Helper()
	h, err := OpenSharedHistory(url, "", node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func jobRecord(id string, at time.Time) persistence.JobRecord {
	return persistence.JobRecord{ID: id, Source: jobs.SourceAPI, Spec: []byte(fmt.Sprintf(`{"id":%q,"schedule":"@every 1m","prompt":"look"}`, id)),
		Created: at, Updated: at, Watermark: at}
}

// TestSharedJobsStore: the cluster's job table refuses an id taken on any
// node, keeps pause state and the base a resume moves, leaves tombstones
// that a publish respects and an add replaces, and bounds live jobs and
// tombstones.
func TestSharedJobsStore(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	ctx := context.Background()
	a, b := openShared(t, srv.URL(), "a"), openShared(t, srv.URL(), "b")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)

	if err := a.AddJob(ctx, jobRecord("j1", t0), "alice"); err != nil {
		t.Fatal(err)
	}
	if err := b.AddJob(ctx, jobRecord("j1", t0), "bob"); !errors.Is(err, jobs.ErrExists) {
		t.Fatalf("the same id through another node: %v, want ErrExists", err)
	}
	if added, err := b.PublishJob(ctx, jobRecord("j1", t0), "bob"); err != nil || added {
		t.Fatalf("publish over a live job: %v %v", added, err)
	}
	resumed := t0.Add(30 * time.Minute)
	if err := b.SetJobPaused(ctx, "j1", true, t0.Add(time.Minute), "bob"); err != nil {
		t.Fatal(err)
	}
	list, err := a.SharedJobs(ctx)
	if err != nil || len(list) != 1 || !list[0].Paused || list[0].Node != "b" || list[0].By != "bob" || !list[0].Watermark.Equal(t0) {
		t.Fatalf("after a pause on b: %+v %v", list, err)
	}
	if err := a.SetJobPaused(ctx, "j1", false, resumed, "alice"); err != nil {
		t.Fatal(err)
	}
	list, _ = b.SharedJobs(ctx)
	if list[0].Paused || !list[0].Watermark.Equal(resumed) || !list[0].Created.Equal(t0) {
		t.Fatalf("after a resume on a: %+v", list[0])
	}
	if err := a.SetJobPaused(ctx, "nope", true, resumed, "alice"); !errors.Is(err, jobs.ErrNoJob) {
		t.Fatalf("pause of an unknown job: %v", err)
	}

	if err := b.DeleteJob(ctx, "j1", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteJob(ctx, "j1", "alice"); !errors.Is(err, jobs.ErrNoJob) {
		t.Fatalf("a second removal: %v, want ErrNoJob", err)
	}
	if err := a.SetJobPaused(ctx, "j1", true, resumed, "alice"); !errors.Is(err, jobs.ErrNoJob) {
		t.Fatalf("pause of a removed job: %v", err)
	}
	list, _ = a.SharedJobs(ctx)
	if len(list) != 1 || !list[0].Deleted {
		t.Fatalf("after removal: %+v", list)
	}
	if added, err := a.PublishJob(ctx, jobRecord("j1", t0), "a"); err != nil || added {
		t.Fatalf("publish over a tombstone: %v %v, want refused", added, err)
	}
	if err := a.AddJob(ctx, jobRecord("j1", t0), "alice"); err != nil {
		t.Fatalf("add over a tombstone: %v", err)
	}
	if list, _ = a.SharedJobs(ctx); len(list) != 1 || list[0].Deleted {
		t.Fatalf("after adding again: %+v", list)
	}

	// Live jobs are bounded as a node's own.
	db, err := sql.Open("libsql", srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO cluster_jobs (job_id, source, spec, paused, created_ms, updated_ms, base_ms, node, changed_by)
		SELECT 'j' || i, 'api', '{}', 0, 0, 0, 0, 'a', 'test' FROM n`, sqlite.MaxJobs); err != nil {
		t.Fatal(err)
	}
	if err := b.AddJob(ctx, jobRecord("one-more", t0), "bob"); !errors.Is(err, sqlite.ErrTooManyJobs) {
		t.Fatalf("job %d: %v, want ErrTooManyJobs", sqlite.MaxJobs+1, err)
	}
	// Tombstones are bounded by age and by count.
	if _, err := db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO cluster_jobs (job_id, source, spec, paused, created_ms, updated_ms, base_ms, deleted_ms, node, changed_by)
		SELECT 'gone' || i, 'api', '{}', 0, 0, 0, 0, ?, 'a', 'test' FROM n`, MaxTombstones+10, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE cluster_jobs SET deleted_ms = ? WHERE job_id = 'gone1'`,
		time.Now().Add(-TombstoneKeep-time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteJob(ctx, "j2", "alice"); err != nil {
		t.Fatal(err)
	}
	var tombs, old int
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN job_id = 'gone1' THEN 1 END) FROM cluster_jobs WHERE deleted_ms IS NOT NULL`).
		Scan(&tombs, &old); err != nil {
		t.Fatal(err)
	}
	if tombs != MaxTombstones || old != 0 {
		t.Fatalf("%d tombstones (the expired one: %d), want %d and 0", tombs, old, MaxTombstones)
	}
	if err := b.AddJob(ctx, jobRecord("one-more", t0), "bob"); err != nil {
		t.Fatalf("after a removal under the bound: %v", err)
	}
	if list, err = a.SharedJobs(ctx); err != nil || len(list) != sqlite.MaxJobs+MaxTombstones {
		t.Fatalf("%d rows listed (%v), want %d", len(list), err, sqlite.MaxJobs+MaxTombstones)
	}
}

// schedNode is one node's scheduler over its own audit store and the
// cluster's shared state.
type schedNode struct {
	t      *testing.T
	id     string
	path   string
	store  *sqlite.Store
	shared *SharedHistory
	clock  *testenv.Clock
	s      *jobs.Scheduler
	mu     sync.Mutex
	runs   []jobs.Run
}

func (n *schedNode) start() {
	n.t.Helper()
	st, err := sqlite.Open(n.path, sqlite.Options{})
	if err != nil {
		n.t.Fatal(err)
	}
	n.store = st
	s, err := jobs.New(jobs.Options{Store: st, Node: n.id, Clock: n.clock, Shared: n.shared,
		Claim: n.shared.ClaimJobRun,
		Runner: func(_ context.Context, r jobs.Run) jobs.Result {
			n.mu.Lock()
			n.runs = append(n.runs, r)
			n.mu.Unlock()
			return jobs.Result{}
		}})
	if err != nil {
		n.t.Fatal(err)
	}
	if err := s.Open(context.Background(), nil); err != nil {
		n.t.Fatal(err)
	}
	n.s = s
}

func (n *schedNode) stop() {
	if n.s != nil {
		n.s.Stop()
		n.s = nil
	}
	if n.store != nil {
		_ = n.store.Close()
		n.store = nil
	}
}

func (n *schedNode) tick(at time.Time) {
	n.t.Helper()
	n.clock.Set(at)
	if err := n.s.Tick(context.Background()); err != nil {
		n.t.Fatalf("%s tick: %v", n.id, err)
	}
	n.s.Wait()
}

// jobs lists the node's jobs as "id paused".
func (n *schedNode) jobs() []string {
	var out []string
	for _, in := range n.s.List() {
		out = append(out, fmt.Sprintf("%s %t", in.ID, in.Paused))
	}
	return out
}

// TestSharedJobsAcrossSchedulers: two nodes' schedulers on one sqld. A job
// added through one is loaded and planned by the other, each instant runs
// once across both, a pause on one stops it on both, a node that was down
// while a job was added loads it when it starts, a removal anywhere
// removes it everywhere, and a job a node had before the cluster is
// published to it.
func TestSharedJobsAcrossSchedulers(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	ctx := context.Background()
	dir := t.TempDir()
	// Near the real time: the claims are pruned by the real clock.
	start := time.Now().Truncate(time.Minute).Add(-30 * time.Minute)
	var nodes []*schedNode
	for _, id := range []string{"n1", "n2"} {
		n := &schedNode{t: t, id: id, path: filepath.Join(dir, id+".db"), shared: openShared(t, srv.URL(), id), clock: testenv.NewClock(start)}
		nodes = append(nodes, n)
		t.Cleanup(n.stop)
	}
	n1, n2 := nodes[0], nodes[1]
	// A job n2 made before it was in a cluster.
	func() {
		st, err := sqlite.Open(n2.path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.PutJob(ctx, jobRecord("old", start), "n2", "alice"); err != nil {
			t.Fatal(err)
		}
	}()
	n1.start()
	n2.start()
	if got := n1.jobs(); len(got) != 0 {
		t.Fatalf("n1 before n2's sync: %v", got)
	}
	n1.tick(start.Add(time.Second))
	equal(t, "n1 after n2 published its old job", n1.jobs(), []string{"old false"})

	j, err := jobs.DecodeSpec([]byte(`{"id": "look", "schedule": "@every 1m", "prompt": "look around"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n1.s.Add(ctx, j, jobs.SourceAPI, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.s.Add(ctx, j, jobs.SourceAPI, "bob"); !errors.Is(err, jobs.ErrExists) {
		t.Fatalf("the same id on the other node: %v, want ErrExists", err)
	}
	n2.tick(start.Add(2 * time.Second))
	equal(t, "n2 after n1 added look", n2.jobs(), []string{"look false", "old false"})

	// Both tick every instant, in turns: each instant runs once.
	at := start
	// next moves to the next instant, where first ticks, then second.
	next := func(first, second *schedNode) {
		at = at.Add(time.Minute)
		first.tick(at.Add(time.Second))
		second.tick(at.Add(2 * time.Second))
	}
	// runs counts look's runs on both nodes. Only look's: "later" (@every
	// 1h) rightly fires when the instants cross a whole hour.
	runs := func() int {
		var total int
		for _, n := range nodes {
			n.mu.Lock()
			for _, r := range n.runs {
				if r.JobID == "look" {
					total++
				}
			}
			n.mu.Unlock()
		}
		return total
	}
	for i := range 6 {
		next(nodes[i%2], nodes[1-i%2])
	}
	ran := map[string][]string{}
	for _, n := range nodes {
		for _, r := range n.runs {
			if r.JobID == "look" {
				k := r.Scheduled.UTC().Format("15:04")
				ran[k] = append(ran[k], n.id)
			}
		}
	}
	if len(ran) != 6 {
		t.Fatalf("%d instants of look ran, want 6: %v", len(ran), ran)
	}
	for k, by := range ran {
		if len(by) != 1 {
			t.Errorf("instant %s ran on %v", k, by)
		}
	}

	// Paused on n2: n1 runs it no more.
	if _, err := n2.s.Pause(ctx, "look", "bob"); err != nil {
		t.Fatal(err)
	}
	next(n1, n2)
	equal(t, "n1 after the pause on n2", n1.jobs(), []string{"look true", "old false"})
	before := runs()

	// n2 is down while n1 adds a job and removes old; back, it has both
	// changes.
	n2.stop()
	j2, err := jobs.DecodeSpec([]byte(`{"id": "later", "schedule": "@every 1h", "prompt": "later"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n1.s.Add(ctx, j2, jobs.SourceModel, "model"); err != nil {
		t.Fatal(err)
	}
	if err := n1.s.Remove(ctx, "old", "alice"); err != nil {
		t.Fatal(err)
	}
	n2.start()
	equal(t, "n2 back", n2.jobs(), []string{"later false", "look true"})
	next(n1, n2)
	if after := runs(); after != before {
		t.Fatalf("a paused job ran: %d runs, %d before", after, before)
	}

	// Resumed on n1 (n2 learns it at its next tick), removed on n2.
	if _, err := n1.s.Resume(ctx, "look", "alice"); err != nil {
		t.Fatal(err)
	}
	next(n2, n1)
	if after := runs(); after != before+1 {
		t.Fatalf("%d runs after the resume, want %d", after, before+1)
	}
	if err := n2.s.Remove(ctx, "look", "bob"); err != nil {
		t.Fatal(err)
	}
	n1.tick(at.Add(3 * time.Second))
	equal(t, "n1 after the removal on n2", n1.jobs(), []string{"later false"})
	recs, err := n1.store.Jobs(ctx)
	if err != nil || len(recs) != 1 || recs[0].ID != "later" {
		t.Fatalf("n1's stored jobs: %+v %v", recs, err)
	}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}
