package sqlite

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// sizes records the number of writes of every commit.
type sizes struct {
	mu sync.Mutex
	n  []int
}

func (c *sizes) commit(commit func() error, n int) error {
	c.mu.Lock()
	c.n = append(c.n, n)
	c.mu.Unlock()
	return commit()
}

func (c *sizes) get() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.n...)
}

// queueCall queues c and returns the channel its result arrives on.
func queueCall(t *testing.T, s *Store, c persistence.ToolCall) <-chan error {
	t.Helper()
	ch := make(chan error, 1)
	if err := s.QueueToolCall(c, func(err error) { ch <- err }); err != nil {
		t.Fatal(err)
	}
	return ch
}

// Queued writes wait for a waited one and share its commit; alone, they
// commit once the linger has passed; Close commits those still lingering.
func TestQueuedWritesLingerForAWaitedOne(t *testing.T) {
	cases := []struct {
		name   string
		linger time.Duration
		// then is what follows two queued writes.
		then func(t *testing.T, s *Store)
		// want is the sizes of the commits once all is done.
		want []int
	}{
		{"a waited write takes them along", time.Hour, func(t *testing.T, s *Store) {
			if err := s.RecordToolCall(context.Background(), sampleCall(3)); err != nil {
				t.Fatal(err)
			}
		}, []int{3}},
		{"alone they commit after the linger", 300 * time.Millisecond, func(*testing.T, *Store) {}, []int{2}},
		{"Close commits them", time.Hour, func(t *testing.T, s *Store) {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}, []int{2}},
		{"negative linger commits at once", -1, func(*testing.T, *Store) {}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c sizes
			s, path := openStoreWithCommit(t, Options{Linger: tc.linger}, c.commit)
			a, b := queueCall(t, s, sampleCall(1)), queueCall(t, s, sampleCall(2))
			tc.then(t, s)
			for _, ch := range []<-chan error{a, b} {
				select {
				case err := <-ch:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("a queued write was never committed")
				}
			}
			got := c.get()
			if tc.want == nil {
				// At once: each commit holds what was queued when the
				// writer took it, however the goroutines ran.
				total := 0
				for _, n := range got {
					total += n
				}
				if total != 2 {
					t.Fatalf("commits %v hold %d writes, want 2", got, total)
				}
			} else if !equalInts(got, tc.want) {
				t.Fatalf("commits of %v writes, want %v", got, tc.want)
			}
			if tc.linger < 0 {
				return
			}
			if n := countRows(t, path); n != int64(tc.want[0]) {
				t.Fatalf("%d rows stored, want %d", n, tc.want[0])
			}
		})
	}
}

// A waited write that finds queued writes lingering commits them on its
// own caller's goroutine: no goroutine is started for the queued writes
// only to hand the commit to. With one P, a goroutine started when the
// first write was queued has not run yet when the waited one comes, so
// it, not the caller, would commit the three (a hand-off to another
// goroutine and back, on a new stack the commit grows).
func TestWaitedWriteCommitsLingeringOnItsOwnGoroutine(t *testing.T) {
	var onCaller []bool
	commit := func(commit func() error, n int) error {
		buf := make([]byte, 64<<10)
		stack := string(buf[:runtime.Stack(buf, false)])
		onCaller = append(onCaller, strings.Contains(stack, "sqlite.(*Store).submit("))
		return commit()
	}
	s, _ := openStoreWithCommit(t, Options{Linger: time.Hour}, commit)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a, b := queueCall(t, s, sampleCall(1)), queueCall(t, s, sampleCall(2))
	if err := s.RecordToolCall(context.Background(), sampleCall(3)); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan error{a, b} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(onCaller, []bool{true}) {
		t.Fatalf("commits on the waited write's caller: %v, want one commit, on the caller", onCaller)
	}
}
