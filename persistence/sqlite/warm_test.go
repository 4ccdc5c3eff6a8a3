package sqlite

import (
	"context"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestReadersOpenOnceAtStart: a read right after Open (a node's start
// lists the approvals left pending) waits for the read connection the
// Store opens beside it instead of opening a second one, which would read
// the whole schema again; then the pool has its full size.
func TestReadersOpenOnceAtStart(t *testing.T) {
	ctx := context.Background()
	for range 20 {
		s, _ := openStore(t, Options{})
		if _, err := s.Approvals(ctx, persistence.ApprovalPending, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecentMessages(ctx, "c", 10); err != nil {
			t.Fatal(err)
		}
		st := s.rdb.Stats()
		if st.OpenConnections != 1 || st.MaxOpenConnections != readConns {
			t.Fatalf("read connections after the first reads: %d open, at most %d; want 1 and %d", st.OpenConnections, st.MaxOpenConnections, readConns)
		}
		if s.recentStatement() == nil {
			t.Fatal("RecentMessages' statement did not prepare")
		}
	}
}

// TestCloseRightAfterOpen: Close waits for the read connection being
// opened beside it.
func TestCloseRightAfterOpen(t *testing.T) {
	for range 20 {
		s, path := openStore(t, Options{})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := again.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
