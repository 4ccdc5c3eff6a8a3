package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// jobStates returns node i's jobs as "id paused", by id; nil when it
// does not answer.
func (tc *testCluster) jobStates(i int) []string {
	tc.t.Helper()
	code, b := tc.api(i, http.MethodGet, "/v1/jobs", nil)
	var page orchestrator.JobsPage
	if code != http.StatusOK || json.Unmarshal(b, &page) != nil {
		return nil
	}
	var out []string
	for _, j := range page.Jobs {
		out = append(out, fmt.Sprintf("%s %t", j.ID, j.Paused))
	}
	return out
}

// seeJobs waits until each node in idx lists exactly want.
func (tc *testCluster) seeJobs(idx []int, want ...string) {
	tc.t.Helper()
	for _, i := range idx {
		testenv.Eventually(tc.t, 15*time.Second, func() bool {
			time.Sleep(100 * time.Millisecond) // one listing per 100ms, not a wait for an outcome
			return slices.Equal(tc.jobStates(i), want)
		}, fmt.Sprintf("%s lists jobs %v (last %v)", tc.nodes[i].id, want, tc.jobStates(i)))
	}
}

// TestClusterSharedJobs: jobs added through one node's API are the
// cluster's (with state_url): every node lists them, a node that was down
// when they were added loads them when it starts, a pause through
// another node holds everywhere, the first instant of a one-minute job
// runs on one node only and the paused job on none, and a removal
// through a third node removes it everywhere. Last, a member that does
// not answer (stopped) is named in another node's approvals listing.
// About 70 s (90 s when it starts late in a minute), most of it waiting
// for the job's first instant (skipped with -short, the rest not).
func TestClusterSharedJobs(t *testing.T) {
	t.Parallel() // a slow test that mostly waits: see "Slow tests run in parallel" in cluster_test.go
	state := sqldtest.Start(t, sqldtest.Options{})
	tc := newTestCluster(t, 3, fmt.Sprintf("state_url = %q\n", state.URL()))
	tc.start(0)
	tc.start(1)
	tc.waitMembers([]int{0, 1}, "node1", "node2")

	// "@every 1m" fires on the minute. Close to one, the pause below could
	// land on quiet's first instant, which a node may then run (it was due
	// before the pause was): add the jobs early in a minute instead.
	if !testing.Short() {
		if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 20*time.Second {
			time.Sleep(left + time.Second)
		}
	}
	added := time.Now()
	for _, spec := range []map[string]any{
		{"id": "look", "schedule": "@every 1m", "prompt": "say look", "missed": "skip"},
		{"id": "quiet", "schedule": "@every 1m", "prompt": "say quiet", "missed": "skip"},
	} {
		if code, b := tc.api(0, http.MethodPost, "/v1/jobs?by=alice", spec); code != http.StatusCreated {
			t.Fatalf("add %s through node1: status %d: %s", spec["id"], code, b)
		}
	}
	if code, b := tc.api(1, http.MethodPost, "/v1/jobs", map[string]any{"id": "look", "schedule": "@every 1h", "prompt": "x"}); code != http.StatusConflict {
		t.Fatalf("the same id through node2: status %d, want 409: %s", code, b)
	}
	tc.seeJobs([]int{1}, "look false", "quiet false")
	if code, b := tc.api(1, http.MethodPost, "/v1/jobs/quiet/pause?by=bob", nil); code != http.StatusOK {
		t.Fatalf("pause through node2: status %d: %s", code, b)
	}
	tc.seeJobs([]int{0, 1}, "look false", "quiet true")

	// node3 was down for all of it.
	tc.start(2)
	tc.waitMembers([]int{0, 1, 2}, "node1", "node2", "node3")
	tc.seeJobs([]int{2}, "look false", "quiet true")

	if !testing.Short() {
		// runs returns the nodes that recorded a run of job, by instant.
		runs := func(job string) map[int64][]string {
			by := map[int64][]string{}
			for i, nd := range tc.nodes {
				for _, row := range query(t, filepath.Join(nd.dir, orchestrator.AuditFile),
					fmt.Sprintf("SELECT scheduled_ms FROM job_runs WHERE job_id = %q", job)) {
					by[row[0].(int64)] = append(by[row[0].(int64)], tc.nodes[i].id)
				}
			}
			return by
		}
		testenv.Eventually(t, 75*time.Second, func() bool {
			time.Sleep(200 * time.Millisecond) // one look at the trails per 200ms
			return len(runs("look")) >= 1
		}, "a node runs look's first instant")
		time.Sleep(3 * time.Second) // every node has ticked past the instant by now
		look, quiet := runs("look"), runs("quiet")
		if len(look) != 1 {
			t.Fatalf("look's instants %v, want the first only (added %s)", look, added.UTC().Format(time.TimeOnly))
		}
		for at, nodes := range look {
			if len(nodes) != 1 {
				t.Fatalf("look's instant %d recorded by %v, want one node", at, nodes)
			}
			t.Logf("look's first instant ran on %s", nodes[0])
		}
		if len(quiet) != 0 {
			t.Fatalf("the paused job ran: %v", quiet)
		}
	}

	if code, b := tc.api(2, http.MethodDelete, "/v1/jobs/look?by=carol", nil); code != http.StatusNoContent {
		t.Fatalf("remove through node3: status %d: %s", code, b)
	}
	tc.seeJobs([]int{0, 1, 2}, "quiet true")
	var rows int
	if err := openState(t, state.URL()).QueryRow(`SELECT count(*) FROM cluster_jobs WHERE deleted_ms IS NULL`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d live jobs in sqld (%v), want 1", rows, err)
	}

	// A member that does not answer is named, not left out silently.
	page := func(i int) orchestrator.ApprovalsPage {
		code, b := tc.api(i, http.MethodGet, "/v1/approvals?state=all", nil)
		var p orchestrator.ApprovalsPage
		if code != http.StatusOK || json.Unmarshal(b, &p) != nil {
			t.Fatalf("approvals through %s: status %d: %s", tc.nodes[i].id, code, b)
		}
		return p
	}
	if p := page(0); p.Partial || len(p.Unanswered) != 0 {
		t.Fatalf("every member answered, yet %+v", p)
	}
	// A stopped node leaves the membership when its etcd lease ends (3 s):
	// a listing that starts later rightly does not ask it. On a loaded
	// machine the request may come that late, so it is tried again, with
	// node3 back, until one was asked while node3 was a member. Twice in
	// CI (2026-11-24 and -25) a listing right after the SIGSTOP came back
	// whole with node3 still a member, node1 logging no failed ask: not
	// understood yet, so that is tried again too, said in the log, and
	// three such tries fail the test.
	stopped := tc.procs[2].cmd.Process
	defer func() { _ = stopped.Signal(syscall.SIGCONT) }()
	for try := 1; ; try++ {
		if err := stopped.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		p := page(0)
		if p.Partial && strings.Join(p.Unanswered, ",") == "node3" {
			break
		}
		members := tc.members(0)
		if try == 3 {
			t.Fatalf("node3 stopped (try %d; node1 sees members %v): %+v, want partial with node3 unanswered", try, members, p)
		}
		t.Logf("try %d: node3 stopped, node1 sees members %v, the listing said %+v; trying again", try, members, p)
		if err := stopped.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		tc.waitMembers([]int{0}, "node1", "node2", "node3")
	}
}
