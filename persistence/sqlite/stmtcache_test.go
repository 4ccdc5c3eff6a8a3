package sqlite

import (
	"context"
	"database/sql"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// The writer's statements are prepared on the writer's connection the
// first time they run, none when the store opens, and reused from then on.
func TestStatementsPreparedAtFirstUse(t *testing.T) {
	insert := chainInserts["events"]
	type seen struct{ prepared, cached int }
	var s *Store
	var commits []seen
	commit := func(commit func() error, _ int) error {
		if s != nil { // the committer's goroutine: it alone uses s.stmts
			c := seen{cached: len(s.stmts.stmts)}
			if _, ok := s.stmts.stmts[insert]; ok {
				c.prepared = 1
			}
			commits = append(commits, c)
		}
		return commit()
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
	for i, c := range commits {
		if c.prepared != 1 || c.cached < 2 { // the insert and the seal
			t.Errorf("write %d: %+v, want the insert and the seal prepared", i+1, c)
		}
	}
	if n := queryOne(t, path, "SELECT count(*) FROM events"); n != int64(3) {
		t.Errorf("events = %v, want 3", n)
	}
}

// Only the cache's own queries are prepared, each once; one that does not
// prepare is not tried again; without the writer's connection nothing is.
func TestStatementCachePrepares(t *testing.T) {
	ctx := context.Background()
	conn := func(t *testing.T, schema bool) *sql.Conn {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); db.Close() })
		if schema {
			if _, err := c.ExecContext(ctx, freshSQL); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	insert := chainInserts["events"]
	tests := []struct {
		name   string
		schema bool
		noConn bool
		query  string
		cached bool
		skip   bool
	}{
		{name: "not one of the cache's", schema: true, query: "SELECT 1"},
		{name: "a chained insert", schema: true, query: insert, cached: true},
		{name: "a chained insert, not on the writer's connection", schema: true, noConn: true, query: insert},
		{name: "a chained insert, its table missing", query: insert, skip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newStmtCache()
			defer c.close()
			wc := conn(t, tt.schema)
			if tt.noConn {
				wc = nil
			}
			first := c.in(ctx, wc, tt.query)
			second := c.in(ctx, wc, tt.query)
			if got := first != nil; got != tt.cached {
				t.Fatalf("prepared = %v, want %v", got, tt.cached)
			}
			if first != second {
				t.Errorf("the second run got another statement")
			}
			if _, ok := c.stmts[tt.query]; ok != tt.cached {
				t.Errorf("cached = %v, want %v", ok, tt.cached)
			}
			if c.skip[tt.query] != tt.skip {
				t.Errorf("skip = %v, want %v", c.skip[tt.query], tt.skip)
			}
		})
	}
}
