package resilient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

func TestLimiterQueueAndCancel(t *testing.T) {
	l := NewLimiter(1, 1)
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// One caller may wait; it gets the slot when the first releases.
	got := make(chan error, 1)
	go func() {
		r, err := l.Acquire(context.Background())
		if err == nil {
			r()
		}
		got <- err
	}()
	if l.Full() {
		t.Fatal("Full with the queue empty")
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return l.Waiting() == 1 }, "second caller queued")
	// A second waiter is refused at once, as Full says.
	if !l.Full() {
		t.Fatal("not Full with the slot held and the queue full")
	}
	if _, err := l.Acquire(context.Background()); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("queue full: %v", err)
	}
	release()
	release() // idempotent: must not free a slot twice
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if l.InFlight() != 0 || l.Full() {
		t.Fatalf("in flight %d (Full %v) after both released", l.InFlight(), l.Full())
	}
	var none *Limiter
	unbounded := NewLimiter(1, -1)
	held, _ := unbounded.Acquire(context.Background())
	if none.Full() || unbounded.Full() {
		t.Fatal("a nil Limiter or one with no bound on its queue is Full")
	}
	held()
	// A waiter whose context ends leaves the queue with ctx's error.
	hold, _ := l.Acquire(context.Background())
	defer hold()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if l.Waiting() != 0 {
		t.Fatalf("waiting %d after the deadline", l.Waiting())
	}
}

func TestChainBoundsConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int64
	gate := make(chan struct{})
	p := &fake{name: "pi", fn: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		<-gate
		return llm.Response{Message: llm.Message{Content: "ok"}}, nil
	}}
	lim := NewLimiter(1, 8)
	c, _ := New([]Link{{Provider: p, Limiter: lim}}, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Complete(context.Background(), llm.Request{})
			errs <- err
		}()
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return lim.Waiting() == 4 && lim.InFlight() == 1 }, "one call in flight, four queued")
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() != 1 || p.calls.Load() != 5 {
		t.Fatalf("peak %d calls %d", peak.Load(), p.calls.Load())
	}
}

func TestQueueFullFallsBack(t *testing.T) {
	lim := NewLimiter(1, 0)
	hold, _ := lim.Acquire(context.Background())
	defer hold()
	local := answers("local")
	c, _ := New([]Link{{Provider: local, Limiter: lim}, {Provider: answers("hosted")}}, Options{})
	r, err := c.Complete(context.Background(), llm.Request{})
	if err != nil || r.Provider != "hosted" || local.calls.Load() != 0 || r.Attempts != 1 {
		t.Fatalf("r %+v err %v local calls %d", r, err, local.calls.Load())
	}
	if h := c.Health()[0]; h.ConsecutiveFailures != 0 || h.InFlight != 1 {
		t.Fatalf("a full queue is not the link's fault: %+v", h)
	}
}
