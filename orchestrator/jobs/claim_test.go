package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// claims is a cluster's shared claim table, in memory: the first node to
// claim a run holds it.
type claims struct {
	mu     sync.Mutex
	holder map[string]string
	// fail, when set, makes every claim fail.
	fail error
}

func (c *claims) claimFor(node string) func(ctx context.Context, job, agent string, at time.Time, window time.Duration) (bool, error) {
	return func(_ context.Context, job, agent string, at time.Time, _ time.Duration) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.fail != nil {
			return false, c.fail
		}
		k := fmt.Sprintf("%s|%s|%d", job, agent, at.UnixMilli())
		if h, ok := c.holder[k]; ok {
			return h == node, nil
		}
		c.holder[k] = node
		return true, nil
	}
}

// Two nodes declaring the same job, one claim table: each instant is
// recorded and run by one node only, whichever ticks first; when one
// node stops ticking (it died) the other runs every instant; a claim
// that fails decides nothing, and the next tick does.
func TestClaimedRunsRunOncePerCluster(t *testing.T) {
	t.Parallel()
	every := Spec{ID: "every", Schedule: "CRON_TZ=UTC * * * * *", Prompt: "look", Agents: []string{"pi-1"}}
	start := t6.Add(-time.Hour)
	cl := &claims{holder: map[string]string{}}
	var nodes []*harness
	for _, id := range []string{"n1", "n2"} {
		h := newHarness(t, start)
		h.node, h.claim = id, cl.claimFor(id)
		h.start(every)
		nodes = append(nodes, h)
	}
	at := start
	for i := range 10 {
		at = at.Add(time.Minute)
		first, second := nodes[i%2], nodes[1-i%2]
		first.tick(at.Add(time.Second))
		second.tick(at.Add(2 * time.Second))
	}
	// n1 dies: n2 alone for five instants.
	for range 5 {
		at = at.Add(time.Minute)
		nodes[1].tick(at.Add(time.Second))
	}
	// The claims fail for one instant: nothing decided, nothing started;
	// the next tick after they work again decides it.
	at = at.Add(time.Minute)
	cl.mu.Lock()
	cl.fail = errors.New("sqld unreachable")
	cl.mu.Unlock()
	nodes[1].clock.Set(at.Add(time.Second))
	if err := nodes[1].s.Tick(context.Background()); err == nil {
		t.Fatal("a tick whose claim failed reported no error")
	}
	nodes[1].s.Wait()
	cl.mu.Lock()
	cl.fail = nil
	cl.mu.Unlock()
	nodes[1].tick(at.Add(2 * time.Second))

	seen := map[string]string{}
	for _, h := range nodes {
		for _, r := range h.started() {
			k := r.Scheduled.UTC().Format("15:04")
			if prev, dup := seen[k]; dup {
				t.Errorf("instant %s ran on %s and %s", k, prev, h.node)
			}
			seen[k] = h.node
		}
	}
	if len(seen) != 16 {
		t.Fatalf("%d instants ran, want 16: %v", len(seen), seen)
	}
	for i, h := range nodes {
		recorded := h.outcomes("every")
		if len(recorded) != len(h.started()) {
			t.Errorf("%s recorded %d runs and started %d", h.node, len(recorded), len(h.started()))
		}
		if i == 0 && (len(recorded) == 0 || len(recorded) == 10) {
			t.Errorf("n1 ran %d of the 10 instants it ticked with n2, want some, not all", len(recorded))
		}
	}
}
