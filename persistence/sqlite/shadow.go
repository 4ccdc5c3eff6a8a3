package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// CheckReadOnly reports whether query, one SQL statement, only reads, by
// running it on a private in-memory database built from schema (the DDL of
// the database the query is meant for) on a connection locked down like
// QueryReadOnly's: query_only and no ATTACH. SQLite itself decides; a write,
// ATTACH or writing pragma fails with an error wrapping ErrReadOnly. Use it
// to vet a query before sending it to a server that offers no read-only
// connection mode.
func CheckReadOnly(ctx context.Context, schema []string, query string, args ...any) error {
	if err := checkOneStatement(query); err != nil {
		return err
	}
	q := url.Values{}
	q.Set("mode", "memory")
	db, err := sql.Open("sqlite", "file:shadow?"+q.Encode())
	if err != nil {
		return fmt.Errorf("open shadow database: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open shadow database: %w", err)
	}
	defer conn.Close()
	for _, stmt := range schema {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("build shadow schema: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		return fmt.Errorf("lock shadow database: %w", err)
	}
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_ATTACHED, 0); err != nil {
		return fmt.Errorf("lock shadow database: %w", err)
	}
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return classifyReadError(err)
	}
	for rows.Next() {
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return classifyReadError(err)
	}
	return nil
}
