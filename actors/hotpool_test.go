package actors

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// A function given to the pool runs on a goroutine that waits for work
// when there is one; functions that block do not hold up the others; and
// goroutines idle for the pool's idle time end.
func TestHotPool(t *testing.T) {
	p := newHotPool(200 * time.Millisecond)
	ran := make(chan int, 10)
	// One at a time: after the first, each reuses the waiting goroutine.
	for i := range 5 {
		p.Go(func() { ran <- i })
		if got := <-ran; got != i {
			t.Fatalf("ran %d, want %d", got, i)
		}
		// The goroutine goes back to waiting after fn returns.
		testenv.Eventually(t, 5*time.Second, func() bool { return p.waitingCount() == 1 && p.live.Load() == 1 }, "one goroutine")
	}
	// Blocked functions: each new one gets a goroutine of its own.
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		p.Go(func() { defer wg.Done(); <-release })
	}
	p.Go(func() { ran <- 99 })
	select {
	case got := <-ran:
		if got != 99 {
			t.Fatalf("ran %d", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a function waited behind blocked ones")
	}
	close(release)
	wg.Wait()
	if s := p.started.Load(); s < 4 || s > 5 {
		t.Fatalf("goroutines started %d, want 4 or 5 (one reused for the first five calls)", s)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return p.live.Load() == 0 }, "idle goroutines end")
}

// TestHotPoolShrinksUnderATrickle: after a burst, a trickle of work (the
// agents' ticks) keeps one goroutine, not the burst's: the others reach
// their idle time. Handed out oldest first, every goroutine of the burst
// got work within its idle time and none ever ended.
func TestHotPoolShrinksUnderATrickle(t *testing.T) {
	const idle = 300 * time.Millisecond
	p := newHotPool(idle)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		p.Go(func() { defer wg.Done(); <-release })
	}
	close(release)
	wg.Wait()
	// A function every 10 ms for four idle times: one waiting goroutine
	// takes each in turn.
	done := make(chan struct{})
	deadline := time.Now().Add(4 * idle)
	for time.Now().Before(deadline) {
		p.Go(func() { done <- struct{}{} })
		<-done
		time.Sleep(10 * time.Millisecond)
	}
	if live := p.live.Load(); live > 2 {
		t.Fatalf("%d goroutines live under a trickle of work after a burst of 20, want at most 2", live)
	}
}

// TestLimitedRunsAllInOrderAtMostMaxAtOnce: functions beyond max wait in
// the queue, not on goroutines, and all run, in the order they came.
func TestLimitedRunsAllInOrderAtMostMaxAtOnce(t *testing.T) {
	for _, limit := range []int{1, 4} {
		t.Run(fmt.Sprint("max ", limit), func(t *testing.T) {
			l := newLimited(limit)
			const n = 200
			release := make(chan struct{})
			var mu sync.Mutex // guards running, peak and order
			var running, peak int
			var order []int
			var wg sync.WaitGroup
			wg.Add(n)
			for i := range n {
				l.Go(func() {
					defer wg.Done()
					mu.Lock()
					running++
					peak = max(peak, running)
					order = append(order, i)
					mu.Unlock()
					<-release
					mu.Lock()
					running--
					mu.Unlock()
				})
			}
			l.mu.Lock()
			queued := len(l.queue)
			l.mu.Unlock()
			if queued != n-limit {
				t.Fatalf("%d queued, want %d (the rest of %d beyond max %d)", queued, n-limit, n, limit)
			}
			testenv.Eventually(t, 5*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return running == limit
			}, "the first functions running")
			close(release)
			wg.Wait()
			if peak != limit {
				t.Fatalf("%d ran at once, want max %d", peak, limit)
			}
			if limit == 1 {
				for i, v := range order {
					if v != i {
						t.Fatalf("ran %v, want in the order they came", order[:i+1])
					}
				}
			}
			if len(order) != n {
				t.Fatalf("%d ran, want %d", len(order), n)
			}
			// The last workers note they are done just after their
			// function returned.
			testenv.Eventually(t, 5*time.Second, func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return l.running == 0 && l.queue == nil
			}, "no worker left, the queue's array released")
		})
	}
}
