package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations holds the schema steps: migrations[i] takes a database from
// PRAGMA user_version i to i+1. Steps are only ever appended; a released step
// never changes, because databases in the field have already run it.
var migrations = []string{
	// v1: the tool-call audit trail and the edge request log.
	`CREATE TABLE tool_calls (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		side TEXT NOT NULL CHECK(side IN ('orchestrator','edge')),
		conversation_id TEXT,
		request_id TEXT,
		call_id TEXT,
		agent_id TEXT,
		tool TEXT NOT NULL,
		params TEXT CHECK(params IS NULL OR json_valid(params)),
		status TEXT NOT NULL CHECK(status IN ('success','error')),
		error_type TEXT,
		error TEXT,
		exit_code INTEGER,
		elapsed_ms INTEGER NOT NULL,
		result_excerpt TEXT,
		result_bytes INTEGER NOT NULL
	);
	CREATE INDEX tool_calls_ts_ms ON tool_calls(ts_ms);
	CREATE INDEX tool_calls_agent_tool ON tool_calls(agent_id, tool);
	CREATE INDEX tool_calls_request_id ON tool_calls(request_id);
	CREATE INDEX tool_calls_conversation_id ON tool_calls(conversation_id);
	CREATE TABLE request_log (
		request_id TEXT PRIMARY KEY,
		state TEXT NOT NULL,
		report BLOB,
		started_ms INTEGER NOT NULL,
		finished_ms INTEGER
	);`,
}

// migrate brings db to the newest version, len(migrations), one transaction per step, and refuses a
// database whose version is newer than this build knows.
func migrate(ctx context.Context, db *sql.DB) error {
	for {
		done, err := migrateStep(ctx, db)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration, if any, in its own transaction.
// The version is read inside the transaction (which holds the write lock,
// see _txlock in writerDSN), so two processes opening a fresh file cannot
// both apply the same step.
func migrateStep(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() // no-op after Commit

	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case version > len(migrations):
		return false, fmt.Errorf("%w: database has schema version %d, this build knows up to %d", ErrSchemaTooNew, version, len(migrations))
	case version == len(migrations):
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("migrate schema to version %d: %w", version+1, err)
	}
	// PRAGMA takes no bound parameters; version is an int we computed.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version+1)); err != nil {
		return false, fmt.Errorf("set schema version %d: %w", version+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit schema version %d: %w", version+1, err)
	}
	return false, nil
}
