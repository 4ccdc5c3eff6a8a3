package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// The writer's own transactions: each state a failure can leave the
// connection in is one the next write starts from.
func TestWriterConnTransactions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// before leaves the connection in some state, through w.
		before func(t *testing.T, w *wconn)
		// rows is how many rows of t the transaction after it must
		// leave (it inserts one and commits).
		rows int64
	}{
		{"nothing open", func(t *testing.T, w *wconn) {}, 2},
		{"rolled back by SQLite already", func(t *testing.T, w *wconn) {
			if err := w.rollbackTx(ctx); err != nil {
				t.Fatalf("rollback with no transaction open: %v, want nil", err)
			}
		}, 2},
		{"left open by a failed rollback", func(t *testing.T, w *wconn) {
			if err := w.beginTx(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := w.conn.ExecContext(ctx, "INSERT INTO t VALUES ('lost')"); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"a commit that failed", func(t *testing.T, w *wconn) {
			if err := w.beginTx(ctx); err != nil {
				t.Fatal(err)
			}
			// A constraint checked at COMMIT: the commit fails and leaves
			// the transaction open.
			if _, err := w.conn.ExecContext(ctx, "INSERT INTO c VALUES (1, 99)"); err != nil {
				t.Fatal(err)
			}
			if err := w.commitTx(ctx); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
				t.Fatalf("commit = %v, want a foreign key failure", err)
			}
			if err := w.rollbackTx(ctx); err != nil {
				t.Fatal(err)
			}
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "w.db")+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			defer db.Close()
			for _, q := range []string{
				"CREATE TABLE t (v TEXT)",
				"CREATE TABLE p (id INTEGER PRIMARY KEY)",
				"CREATE TABLE c (id INTEGER, p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)",
				"INSERT INTO t VALUES ('kept')",
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			w, err := openWConn(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			tt.before(t, w)
			if err := w.beginTx(ctx); err != nil {
				t.Fatalf("begin: %v", err)
			}
			if _, err := w.conn.ExecContext(ctx, "INSERT INTO t VALUES ('new')"); err != nil {
				t.Fatal(err)
			}
			if err := w.commitTx(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			var n int64
			if err := db.QueryRow("SELECT count(*) FROM t WHERE v != 'lost'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			var lost int64
			if err := db.QueryRow("SELECT count(*) FROM t WHERE v = 'lost'").Scan(&lost); err != nil {
				t.Fatal(err)
			}
			if n != tt.rows || lost != 0 {
				t.Errorf("rows = %d (and %d of the abandoned transaction), want %d and none", n, lost, tt.rows)
			}
		})
	}
}
