package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// createByScript makes a new database at path as a first start did before
// the image: migrate on the writer's settings. It returns its chain id.
func createByScript(t testing.TB, path string, key auditchain.Key) string {
	t.Helper()
	ctx := context.Background()
	opts, _ := Options{}.withDefaults()
	dsn, err := writerDSN(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, db, key, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	id, err := readChainID(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// makeImage makes fresh.db: a database created by the script, with the
// placeholders of imageFields in their values' places.
func makeImage(t *testing.T) []byte {
	path := filepath.Join(t.TempDir(), "fresh.db")
	key, err := auditchain.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	createByScript(t, path, key)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	// The values replaced leave no copy behind.
	if _, err := db.Exec("PRAGMA secure_delete = ON"); err != nil {
		t.Fatal(err)
	}
	for _, f := range imageFields {
		if res, err := db.Exec(f.set, f.placeholder()); err != nil {
			t.Fatal(err)
		} else if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s: %d rows set", f.name, n)
		}
	}
	if err := db.Close(); err != nil { // checkpoints the log into the file
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the log is still there after close: %v", err)
	}
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// describe lists what makes the database at path: its settings, its
// schema and every table's rows.
func describe(t testing.TB, path string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var out []string
	for _, p := range []string{"user_version", "application_id", "page_size", "page_count", "freelist_count",
		"journal_mode", "auto_vacuum", "encoding", "schema_version", "integrity_check"} {
		var v string
		if err := db.QueryRowContext(ctx, "PRAGMA "+p).Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, "pragma "+p+" = "+v)
	}
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, rootpage, coalesce(sql, '') FROM sqlite_master ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var typ, name, tbl, root, stmt string
		if err := rows.Scan(&typ, &name, &tbl, &root, &stmt); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Join([]string{typ, name, tbl, root, stmt}, "|"))
		if typ == "table" {
			tables = append(tables, name)
		}
	}
	rows.Close()
	for _, table := range tables {
		for _, vals := range tableRows(t, db, table) {
			line := table + ":"
			for _, v := range vals {
				line += fmt.Sprintf(" %v/%q", v.Valid, v.String)
			}
			out = append(out, line)
		}
	}
	return out
}

// tableRows returns every row of table in db, each column as text.
func tableRows(t testing.TB, db *sql.DB, table string) [][]sql.NullString {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]sql.NullString
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// createWithoutSchema makes path a database SQLite has written its header
// to, in WAL mode, without any table: what a first start cut after that
// leaves.
func createWithoutSchema(t testing.TB, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}

// TestImageIsTheScriptsDatabase: a database made from the built-in image
// is the database the script makes, for the same key and chain id:
// settings (user_version, page size, WAL, ...), schema (every object's
// SQL and root page) and rows; and the image was written by the SQLite
// this build links. -update writes fresh.db again.
func TestImageIsTheScriptsDatabase(t *testing.T) {
	if *update {
		if err := os.WriteFile("fresh.db", makeImage(t), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Skip("wrote fresh.db")
	}
	dir := t.TempDir()
	key, err := auditchain.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	scripted := filepath.Join(dir, "script.db")
	chainID := createByScript(t, scripted, key)
	img, err := imageFor(key, chainID)
	if err != nil {
		t.Fatalf("%v: run go test ./persistence/sqlite -run %s -update", err, t.Name())
	}
	imaged := filepath.Join(dir, "image.db")
	if err := os.WriteFile(imaged, img, 0o600); err != nil {
		t.Fatal(err)
	}
	want, got := describe(t, scripted), describe(t, imaged)
	if !slices.Equal(want, got) {
		t.Fatalf("the image is not the script's database: run go test ./persistence/sqlite -run %s -update\n--- script:\n%s\n--- image:\n%s",
			t.Name(), strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	if !slices.Contains(got, "pragma journal_mode = wal") || !slices.Contains(got, "pragma integrity_check = ok") ||
		!slices.Contains(got, fmt.Sprintf("pragma user_version = %d", len(migrations))) {
		t.Fatalf("image settings: %v", got[:10])
	}

	// Bytes 96-99 of the header: the version of the SQLite that last
	// wrote the file.
	var version string
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT sqlite_version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	var major, minor, patch uint32
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); err != nil {
		t.Fatal(err)
	}
	if wrote, links := binary.BigEndian.Uint32(freshImage[96:100]), major*1_000_000+minor*1_000+patch; wrote != links {
		t.Fatalf("fresh.db was written by SQLite %d, this build links %d: run go test ./persistence/sqlite -run %s -update", wrote, links, t.Name())
	}
}

// TestNewStoreIsMadeFromTheImage: Open on a new path writes the image;
// on an existing file without a schema, or beside a journal, it leaves
// the file to SQLite and creates the schema with the script. Either way
// the store works and its chain verifies.
func TestNewStoreIsMadeFromTheImage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		prepare   func(t *testing.T, path string)
		fromImage bool
	}{
		{"new path", func(*testing.T, string) {}, true},
		{"empty file", func(t *testing.T, path string) { writeFile(t, path, nil) }, true},
		{"file without schema", func(t *testing.T, path string) { createWithoutSchema(t, path) }, false},
		{"journal beside", func(t *testing.T, path string) {
			writeFile(t, path, nil)
			writeFile(t, path+"-journal", nil)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit", "audit.db")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, path)
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Size() == int64(len(freshImage)); got != tc.fromImage {
				t.Errorf("made from the image: %v, want %v (file %d bytes)", got, tc.fromImage, fi.Size())
			}
			if tc.fromImage && fi.Mode().Perm() != 0o600 {
				t.Errorf("database file mode %v, want 0600", fi.Mode().Perm())
			}
			if s.KeyPredatesTrail() {
				t.Error("a new database beside a new key: KeyPredatesTrail")
			}
			if err := s.RecordEvent(ctx, persistence.Event{Node: "n", Kind: persistence.EventNodeStart}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyChain(ctx, path)
			if err != nil || rep.Verified != 1 {
				t.Fatalf("verify: %+v %v", rep, err)
			}
		})
	}
}

// TestImageInstallCut: a first start cut at each step of writing the image
// leaves an empty database file (and maybe the image's temporary file) or
// the whole image; the next start sweeps the temporary file and opens a
// database whose chain verifies.
func TestImageInstallCut(t *testing.T) {
	ctx := context.Background()
	errCut := errors.New("cut")
	for _, step := range []string{imageWritten, imageSynced, imageRenamed} {
		t.Run(step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			saved := imageFault
			imageFault = func(s string) error {
				if s == step {
					return errCut
				}
				return nil
			}
			_, err := Open(path, Options{})
			imageFault = saved
			if !errors.Is(err, errCut) {
				t.Fatalf("Open cut at %s: %v", step, err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			renamed := step == imageRenamed
			if renamed && fi.Size() != int64(len(freshImage)) || !renamed && fi.Size() != 0 {
				t.Fatalf("cut at %s: database file of %d bytes, want the image's %d or nothing", step, fi.Size(), len(freshImage))
			}
			if !renamed {
				// A crash leaves the temporary file, which the error did not.
				writeFile(t, filepath.Join(filepath.Dir(path), ".audit.db.image-123.tmp"), freshImage[:len(freshImage)/2])
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatalf("Open after a cut at %s: %v", step, err)
			}
			// Cut before the rename, the key was there without its trail.
			if s.KeyPredatesTrail() != !renamed {
				t.Errorf("KeyPredatesTrail %v after a cut at %s", s.KeyPredatesTrail(), step)
			}
			if err := s.RecordEvent(ctx, persistence.Event{Node: "n", Kind: persistence.EventNodeStart}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".audit.db.image-*"))
			if len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
			if rep, err := VerifyChain(ctx, path); err != nil || rep.Verified != 1 {
				t.Fatalf("verify: %+v %v", rep, err)
			}
		})
	}
}

// TestImageReplacesTheLockedFile: a second writer is refused both by the
// lock on the empty file the image replaced (held by a process that
// opened the path before) and by the lock on the image.
func TestImageReplacesTheLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	writeFile(t, path, nil)
	before, err := os.Open(path) // opened before the image replaces it
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if unlocked, err := lockOpen(before); unlocked {
		t.Skip("no flock on this file system")
	} else if !errors.Is(err, ErrInUse) {
		t.Errorf("lock of the replaced file: %v, want ErrInUse", err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrInUse) {
		t.Errorf("second Open: %v, want ErrInUse", err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOpenNew: Open and Close of a new database, made from the image
// (a new path) against made by the script (a file SQLite has written its
// header to, which Open leaves to SQLite), key file included.
func BenchmarkOpenNew(b *testing.B) {
	for _, bc := range []struct {
		name    string
		prepare func(b *testing.B, path string)
	}{
		{"image", func(*testing.B, string) {}},
		{"script", func(b *testing.B, path string) { createWithoutSchema(b, path) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			root := b.TempDir()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				dir := filepath.Join(root, fmt.Sprint(i))
				if err := os.Mkdir(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				path := filepath.Join(dir, "audit.db")
				bc.prepare(b, path)
				b.StartTimer()
				s, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
