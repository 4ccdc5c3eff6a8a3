package sqlite

import (
	"context"
	"database/sql"
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

func (c *sizes) commit(tx *sql.Tx, n int) error {
	c.mu.Lock()
	c.n = append(c.n, n)
	c.mu.Unlock()
	return tx.Commit()
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
