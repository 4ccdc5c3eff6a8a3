package sqlite

// This file opens an audit database for reading wherever it lies, including
// a copy on read-only media (forensics): there SQLite cannot create the
// -shm file a WAL database needs, and a plain mode=ro open fails with
// "unable to open database file".

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// openReadOnly opens one locked-down read-only connection to the database
// at path, which must exist; closeConn releases it (and removes any private
// copy it made).
//
// It first opens the file in place with mode=ro, which sees what a running
// node has committed, -wal included. When SQLite cannot open it that way
// (a read-only directory without a usable -shm file), it falls back:
//   - with a non-empty -wal beside the file, to a private temporary copy of
//     the file and its -wal, opened mode=ro, so that the records still only
//     in the -wal are seen; the copy needs as much free temporary space as
//     the two files take;
//   - otherwise to immutable=1, which reads the file as it is and, there
//     being no -wal, misses nothing.
func openReadOnly(ctx context.Context, path string) (conn *sql.Conn, closeConn func(), err error) {
	// SQLite's mode=ro never creates the file either (it fails with
	// SQLITE_CANTOPEN); this check only gives the clearer message.
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no database file at %s: %w", path, err)
	} else if err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		// A FIFO put in its place made SQLite's open wait for a writer
		// for ever (audit verify and sql hung, deaf to SIGTERM).
		return nil, nil, fmt.Errorf("%s is not a regular file (%s): not a database", path, fi.Mode().Type())
	}
	conn, closeConn, err = openReadOnlyDSN(ctx, path, false)
	if err == nil || !isCantOpen(err) {
		return conn, closeConn, err
	}
	if fi, werr := os.Stat(path + "-wal"); werr == nil && fi.Size() > 0 {
		return openPrivateCopy(ctx, path)
	}
	return openReadOnlyDSN(ctx, path, true)
}

// openReadOnlyDSN opens and locks down one read-only connection to path,
// with immutable=1 when immutable, and makes SQLite open the file at once
// (it does so lazily), so that a failure shows here.
func openReadOnlyDSN(ctx context.Context, path string, immutable bool) (*sql.Conn, func(), error) {
	dsn, err := readOnlyDSN(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if immutable {
		dsn += "&immutable=1"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	if err := lockDown(conn); err != nil {
		conn.Close()
		db.Close()
		return nil, nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		conn.Close()
		db.Close()
		return nil, nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	return conn, func() { conn.Close(); db.Close() }, nil
}

// openPrivateCopy copies path and its -wal into a new private temporary
// directory and opens the copy read-only there, where SQLite can create
// the -shm. The source is read-only media, so it cannot change meanwhile.
func openPrivateCopy(ctx context.Context, path string) (*sql.Conn, func(), error) {
	dir, err := os.MkdirTemp("", "evoclaw-audit-ro-")
	if err != nil {
		return nil, nil, fmt.Errorf("open %s read-only through a private copy: %w", path, err)
	}
	dst := filepath.Join(dir, filepath.Base(path))
	for _, suffix := range []string{"", "-wal"} {
		if err := copyFile(path+suffix, dst+suffix); err != nil {
			os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("open %s read-only through a private copy: %w", path, err)
		}
	}
	conn, closeConn, err := openReadOnlyDSN(ctx, dst, false)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("open %s read-only through a private copy: %w", path, err)
	}
	return conn, func() { closeConn(); os.RemoveAll(dir) }, nil
}

// copyFile copies src to a new file dst, mode 0600: the audit trail stays
// private in the temporary directory too.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// isCantOpen reports SQLite's SQLITE_CANTOPEN ("unable to open database
// file"), with any extended code.
func isCantOpen(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CANTOPEN
}

// readOnlyDSN builds the DSN of a QueryReadOnly connection. It must be a
// "file:" URI: the driver hands only those to SQLite whole, so that SQLite
// applies mode=ro (open read-only, never create). query_only(1) is a second
// guard that makes even the temp database refuse writes.
func readOnlyDSN(path string) (string, error) {
	uri, err := fileURI(path)
	if err != nil {
		return "", err
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", readBusyTimeoutMs))
	q.Add("_pragma", "query_only(1)")
	return uri + "?" + q.Encode(), nil
}
