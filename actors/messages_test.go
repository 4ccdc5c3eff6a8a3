package actors

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestSpawnBudgetShareKeepsTheTotal: starts and shares taken at once by
// many goroutines never add up to more than the budget: what was started,
// what was given away and what is left make the budget exactly.
func TestSpawnBudgetShareKeepsTheTotal(t *testing.T) {
	for _, budget := range []int{0, 1, 2, 32, 1000} {
		b := NewSpawnBudget(budget)
		var started, shared atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					if (g+i)%3 == 0 {
						n, ok := b.Share()
						if !ok || n < 0 {
							t.Errorf("share %d, %v", n, ok)
						}
						shared.Add(n)
					} else if b.Take() {
						started.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if got := started.Load() + shared.Load() + max(b.Left(), 0); got != int64(budget) {
			t.Errorf("budget %d: %d started + %d shared + %d left = %d", budget, started.Load(), shared.Load(), max(b.Left(), 0), got)
		}
	}
	var none *SpawnBudget
	if n, ok := none.Share(); ok || n != 0 {
		t.Errorf("a nil budget shared %d, %v", n, ok)
	}
}
