package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"testing"
)

var shadowSchema = []string{
	`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, body TEXT CHECK(body IS NULL OR json_valid(body)))`,
	`INSERT INTO t (name, body) VALUES ('a', '{"x":1}'), ('b', NULL)`,
	`CREATE VIEW v AS SELECT name FROM t`,
}

func TestCheckReadOnly(t *testing.T) {
	tests := []struct {
		q        string
		readOnly bool // want nil
		args     []any
	}{
		{"SELECT * FROM t", true, nil},
		{"SELECT json_extract(body, '$.x') FROM t WHERE name = ?1", true, []any{"a"}},
		{"WITH x AS (SELECT 1) SELECT * FROM x", true, nil},
		{"SELECT * FROM v", true, nil},
		{"PRAGMA table_info(t)", true, nil},
		{"DELETE FROM t", false, nil},
		{"UPDATE t SET name = 'z'", false, nil},
		{"INSERT INTO t (name) VALUES ('c')", false, nil},
		{"DROP TABLE t", false, nil},
		{"CREATE TABLE u (a)", false, nil},
		{"CREATE TEMP TABLE u (a)", false, nil},
		{"ATTACH DATABASE 'x.db' AS x", false, nil},
		{"PRAGMA user_version = 3", false, nil},
		{"ANALYZE", false, nil},
		{"VACUUM INTO 'copy.db'", false, nil},
	}
	for _, tt := range tests {
		err := CheckReadOnly(context.Background(), shadowSchema, tt.q, tt.args...)
		if tt.readOnly && err != nil {
			t.Errorf("%q: %v, want it allowed", tt.q, err)
		}
		if !tt.readOnly && !errors.Is(err, ErrReadOnly) {
			t.Errorf("%q: %v, want ErrReadOnly", tt.q, err)
		}
	}
	if err := CheckReadOnly(context.Background(), shadowSchema, "SELECT 1; DELETE FROM t"); !errors.Is(err, ErrNotOneStatement) {
		t.Errorf("two statements: %v", err)
	}
}

// FuzzCheckReadOnly checks the promise CheckReadOnly makes: a statement it
// lets through changes nothing when it then runs on a writable database of
// the same schema (no row changed, schema and user version untouched).
func FuzzCheckReadOnly(f *testing.F) {
	for _, q := range []string{"SELECT * FROM t", "DELETE FROM t", "PRAGMA user_version = 1", "REINDEX",
		"INSERT INTO t (name) SELECT name FROM t", "ANALYZE", "SELECT count(*) FROM v", "CREATE INDEX i ON t(name)"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		ctx := context.Background()
		if CheckReadOnly(ctx, shadowSchema, q) != nil {
			return
		}
		db, err := sql.Open("sqlite", "file:fuzz?mode=memory")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		for _, s := range shadowSchema {
			if _, err := db.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
		state := func() (changes, schema, user int64) {
			if err := db.QueryRow("SELECT total_changes(), (SELECT schema_version FROM pragma_schema_version), (SELECT user_version FROM pragma_user_version)").Scan(&changes, &schema, &user); err != nil {
				t.Fatal(err)
			}
			return
		}
		c0, s0, u0 := state()
		if rows, err := db.Query(q); err == nil {
			for rows.Next() {
			}
			rows.Close()
		}
		if c1, s1, u1 := state(); c1 != c0 || s1 != s0 || u1 != u0 {
			t.Fatalf("%q passed CheckReadOnly but changed the database (changes %d->%d, schema %d->%d, user %d->%d)", q, c0, c1, s0, s1, u0, u1)
		}
	})
}
