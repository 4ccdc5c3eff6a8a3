package sqlite

import (
	"context"
	_ "embed"
	"fmt"
	"slices"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// A database with nothing in it is not taken through every migration:
// it gets the schema the migrations end with in one script, fresh.sql,
// then the rows the migrations would have written. Applying the
// steps one after the other (ALTER TABLE rewriting the schema each time,
// tables created and altered, the summaries' backfill) costs a node's
// first start several milliseconds; the script is one pass.
//
// fresh.sql is generated from the migrations, never written by hand:
// TestFreshSchemaIsTheMigratedOne fails when it differs from what the
// migrations produce, and `go test ./persistence/sqlite -run
// TestFreshSchemaIsTheMigratedOne -update` writes it again. The same test
// checks that a fresh database equals a migrated one, rows included.

//go:embed fresh.sql
var freshSQL string

// freshRows are the rows the migrations' SQL writes into an empty
// database (the hooks write theirs themselves): the chain's random id and
// the request log's byte count.
const freshRows = `INSERT INTO audit_meta (key, value) VALUES ('chain_id', lower(hex(randomblob(16))));
	INSERT INTO request_log_held (id, bytes) VALUES (1, 0);`

// createFresh creates the newest schema in an empty database within tx.
func createFresh(ctx context.Context, tx dbtx, key auditchain.Key) error {
	if _, err := tx.ExecContext(ctx, freshSQL); err != nil {
		return fmt.Errorf("create schema version %d: %w", len(migrations), err)
	}
	if _, err := tx.ExecContext(ctx, freshRows); err != nil {
		return fmt.Errorf("create schema version %d: %w", len(migrations), err)
	}
	versions := make([]int, 0, len(migrationHooks))
	for v := range migrationHooks {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	for _, v := range versions {
		if err := migrationHooks[v](ctx, tx, key); err != nil {
			return fmt.Errorf("create schema version %d: step %d: %w", len(migrations), v, err)
		}
	}
	return nil
}

// schemaScript returns the statements that create the schema of the
// database in tx, in the order it was created (what fresh.sql holds).
func schemaScript(ctx context.Context, tx dbtx) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	script := "-- Generated from the migrations in schema*.go by TestFreshSchemaIsTheMigratedOne -update: do not edit.\n"
	for rows.Next() {
		var stmt string
		if err := rows.Scan(&stmt); err != nil {
			return "", err
		}
		script += stmt + ";\n"
	}
	return script, rows.Err()
}
