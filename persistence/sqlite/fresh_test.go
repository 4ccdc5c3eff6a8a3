package sqlite

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

var update = flag.Bool("update", false, "write fresh.sql from the migrations")

// TestFreshSchemaIsTheMigratedOne: an empty database gets the schema in
// one script (fresh.sql) instead of every migration in turn. The script
// must be what the migrations produce, and a database created from it
// must equal one taken through every migration: the same tables, indexes
// and triggers with the same SQL, the same version, the same rows (but
// for the chain's random id and what is keyed by it).
func TestFreshSchemaIsTheMigratedOne(t *testing.T) {
	ctx := context.Background()
	key, err := auditchain.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string) *sql.DB {
		db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	inTx := func(db *sql.DB, f func(tx *sql.Tx) error) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := f(tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}

	stepped := open("stepped.db")
	var script string
	inTx(stepped, func(tx *sql.Tx) error {
		if err := migrateSteps(ctx, tx, 0, key); err != nil {
			return err
		}
		script, err = schemaScript(ctx, tx)
		return err
	})
	if *update {
		if err := os.WriteFile("fresh.sql", []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Skip("wrote fresh.sql")
	}
	if script != freshSQL {
		t.Fatalf("fresh.sql is not what the migrations produce: run go test ./persistence/sqlite -run %s -update\n--- migrations produce:\n%s", t.Name(), script)
	}

	fresh := open("fresh.db")
	if err := migrate(ctx, fresh, key, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := stepped.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		t.Fatal(err)
	}
	schema := func(db *sql.DB) (objs [][4]string, version int) {
		rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var o [4]string
			if err := rows.Scan(&o[0], &o[1], &o[2], &o[3]); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, o)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			t.Fatal(err)
		}
		return objs, version
	}
	so, sv := schema(stepped)
	fo, fv := schema(fresh)
	if fv != len(migrations) || !slices.Equal(so, fo) {
		t.Fatalf("fresh schema (version %d):\n%v\nmigrated (version %d):\n%v", fv, fo, sv, so)
	}
	if len(so) < 20 {
		t.Fatalf("only %d schema objects: %v", len(so), so)
	}

	// Rows: every table's, as text; the chain id is random and the
	// legacy MAC is keyed by it.
	random := regexp.MustCompile(`^[0-9a-f]{32}$|^[0-9a-f]{64}$`)
	dump := func(db *sql.DB) map[string][]string {
		out := map[string][]string{}
		for _, o := range so {
			if o[0] != "table" || o[1] == "sqlite_sequence" {
				continue
			}
			for _, vals := range tableRows(t, db, o[1]) {
				line := ""
				for _, v := range vals {
					if random.MatchString(v.String) {
						v.String = "<random>"
					}
					line += v.String + "|"
				}
				out[o[1]] = append(out[o[1]], line)
			}
		}
		return out
	}
	sr, fr := dump(stepped), dump(fresh)
	if len(fr["audit_meta"]) < 3 {
		t.Fatalf("fresh audit_meta %v: want the chain id, key id and legacy bounds", fr["audit_meta"])
	}
	for table, rows := range sr {
		if !slices.Equal(rows, fr[table]) {
			t.Errorf("table %s: fresh %v, migrated %v", table, fr[table], rows)
		}
	}
	for table := range fr {
		if _, ok := sr[table]; !ok {
			t.Errorf("table %s has rows only when fresh: %v", table, fr[table])
		}
	}
}

// BenchmarkCreateSchema: an empty database's schema from fresh.sql
// against every migration in turn (what a node's first start did before).
func BenchmarkCreateSchema(b *testing.B) {
	ctx := context.Background()
	key, err := auditchain.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		create func(tx *sql.Tx) error
	}{
		{"fresh script", func(tx *sql.Tx) error { return createFresh(ctx, tx, key) }},
		{"every migration", func(tx *sql.Tx) error { return migrateSteps(ctx, tx, 0, key) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			for i := range b.N {
				b.StopTimer()
				db, err := sql.Open("sqlite", filepath.Join(dir, fmt.Sprint(i, ".db"))+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
				if err != nil {
					b.Fatal(err)
				}
				db.SetMaxOpenConns(1)
				if err := db.PingContext(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := bc.create(tx); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				db.Close()
			}
		})
	}
}
