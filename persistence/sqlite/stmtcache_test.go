package sqlite

import (
	"context"
	"database/sql"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// The writer's statements are prepared after the transaction that first
// ran them: none when the store opens, the first write of a kind runs
// unprepared, the next ones reuse the prepared statement.
func TestStatementsPreparedAfterFirstUse(t *testing.T) {
	insert := chainInserts["events"]
	type seen struct{ prepared, bound, cached int }
	var s *Store
	var commits []seen
	commit := func(tx *sql.Tx, _ int) error {
		if s != nil { // the committer's goroutine: it alone uses s.stmts
			c := seen{cached: len(s.stmts.stmts)}
			if _, ok := s.stmts.stmts[insert]; ok {
				c.prepared = 1
			}
			if _, ok := s.stmts.bound[insert]; ok && s.stmts.tx == tx {
				c.bound = 1
			}
			commits = append(commits, c)
		}
		return tx.Commit()
	}
	s, path := openStoreWithCommit(t, Options{}, commit)
	if s.stmts.stmts == nil || len(s.stmts.stmts) != 0 {
		t.Fatalf("statements prepared at Open: %d, want none", len(s.stmts.stmts))
	}
	for range 3 {
		if err := s.RecordEvent(context.Background(), persistence.Event{Node: "n", Kind: persistence.EventNodeStart}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(commits) != 3 {
		t.Fatalf("%d commits, want 3", len(commits))
	}
	if c := commits[0]; c.prepared != 0 || c.bound != 0 {
		t.Errorf("first write: %+v, want the insert unprepared", c)
	}
	for i, c := range commits[1:] {
		if c.prepared != 1 || c.bound != 1 {
			t.Errorf("write %d: %+v, want the insert prepared and bound to its transaction", i+2, c)
		}
		if c.cached < 2 { // the insert and the seal
			t.Errorf("write %d: %d statements prepared, want the insert's and the seal's at least", i+2, c.cached)
		}
	}
	if n := queryOne(t, path, "SELECT count(*) FROM events"); n != int64(3) {
		t.Errorf("events = %v, want 3", n)
	}
}

// Only the cache's own queries are noted, each once; one that does not
// prepare is not tried again.
func TestStatementCacheNotes(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tests := []struct {
		name   string
		query  string
		noted  bool
		cached bool
	}{
		{"not one of the cache's", "SELECT 1", false, false},
		{"a chained insert, its table missing", chainInserts["events"], true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newStmtCache()
			defer c.close()
			for range 2 {
				if st := c.in(ctx, nil, tt.query); st != nil {
					t.Fatal("a statement before any was prepared")
				}
			}
			if got := len(c.wanted); got != map[bool]int{true: 1, false: 0}[tt.noted] {
				t.Fatalf("noted %d times, want noted=%v once", got, tt.noted)
			}
			c.prepareWanted(ctx, db)
			if _, ok := c.stmts[tt.query]; ok != tt.cached {
				t.Errorf("cached = %v, want %v", ok, tt.cached)
			}
			c.in(ctx, nil, tt.query)
			if len(c.wanted) != 0 {
				t.Errorf("noted again after prepareWanted: %q", c.wanted)
			}
		})
	}
}
