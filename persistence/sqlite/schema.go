package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// migrations holds the schema steps: migrations[i] takes a database from
// PRAGMA user_version i to i+1. Steps are only ever appended; a released step
// never changes, because databases in the field have already run it. (One
// did, v12, whose rows a database upgraded either way holds validly: see
// schema_v12.go.)
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
	// v2: LLM calls (cost tracking), conversation histories, node and agent
	// events. JSON columns are stored as TEXT and checked with json_valid,
	// so SQLite's JSON functions work on them.
	`CREATE TABLE llm_calls (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		conversation_id TEXT,
		provider TEXT NOT NULL,
		model TEXT,
		input_tokens INTEGER NOT NULL CHECK(input_tokens >= 0),
		output_tokens INTEGER NOT NULL CHECK(output_tokens >= 0),
		latency_ms INTEGER NOT NULL CHECK(latency_ms >= 0),
		status TEXT NOT NULL CHECK(status IN ('success','error')),
		error_type TEXT,
		error TEXT,
		iteration INTEGER NOT NULL CHECK(iteration >= 0)
	);
	CREATE INDEX llm_calls_ts_ms ON llm_calls(ts_ms);
	CREATE INDEX llm_calls_conversation_id ON llm_calls(conversation_id);
	CREATE INDEX llm_calls_model ON llm_calls(provider, model);
	CREATE TABLE conversations (
		conversation_id TEXT PRIMARY KEY,
		first_ts TEXT NOT NULL,
		first_ms INTEGER NOT NULL,
		last_ts TEXT NOT NULL,
		last_ms INTEGER NOT NULL,
		message_count INTEGER NOT NULL CHECK(message_count >= 0)
	);
	CREATE INDEX conversations_last_ms ON conversations(last_ms);
	CREATE TABLE messages (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		conversation_id TEXT NOT NULL REFERENCES conversations(conversation_id),
		seq INTEGER NOT NULL CHECK(seq >= 1),
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		role TEXT NOT NULL,
		body TEXT NOT NULL CHECK(json_valid(body)),
		UNIQUE(conversation_id, seq)
	);
	CREATE INDEX messages_ts_ms ON messages(ts_ms);
	CREATE TABLE events (
		id INTEGER PRIMARY KEY,
		record_id TEXT NOT NULL UNIQUE,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		agent_id TEXT,
		kind TEXT NOT NULL,
		detail TEXT CHECK(detail IS NULL OR json_valid(detail))
	);
	CREATE INDEX events_ts_ms ON events(ts_ms);
	CREATE INDEX events_agent_kind ON events(agent_id, kind);`,
	// v3: the hash chain (tamper evidence, see persistence/auditchain), its
	// retention checkpoints, and the cold shipper's high-water mark. Rows
	// written before v3 keep a NULL chain_seq and are reported as unchained.
	`ALTER TABLE tool_calls ADD COLUMN chain_seq INTEGER;
	ALTER TABLE tool_calls ADD COLUMN hash TEXT;
	CREATE UNIQUE INDEX tool_calls_chain_seq ON tool_calls(chain_seq);
	ALTER TABLE llm_calls ADD COLUMN chain_seq INTEGER;
	ALTER TABLE llm_calls ADD COLUMN hash TEXT;
	CREATE UNIQUE INDEX llm_calls_chain_seq ON llm_calls(chain_seq);
	ALTER TABLE messages ADD COLUMN chain_seq INTEGER;
	ALTER TABLE messages ADD COLUMN hash TEXT;
	CREATE UNIQUE INDEX messages_chain_seq ON messages(chain_seq);
	ALTER TABLE events ADD COLUMN chain_seq INTEGER;
	ALTER TABLE events ADD COLUMN hash TEXT;
	CREATE UNIQUE INDEX events_chain_seq ON events(chain_seq);
	CREATE TABLE audit_meta (
		key TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);
	INSERT INTO audit_meta (key, value) VALUES ('chain_id', lower(hex(randomblob(16))));
	CREATE TABLE chain_checkpoints (
		id INTEGER PRIMARY KEY,
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		ts TEXT NOT NULL,
		deleted INTEGER NOT NULL,
		reason TEXT NOT NULL
	);
	CREATE TABLE cold_shipped (
		id INTEGER PRIMARY KEY CHECK(id = 1),
		shipped_seq INTEGER NOT NULL,
		ts TEXT NOT NULL
	);`,
	// v4: an edge agent's outbox: reports produced while the broker was
	// unreachable, delivered oldest first after reconnect (AUTOINCREMENT:
	// ids only grow, so id order is queue order).
	`CREATE TABLE outbox (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		topic TEXT NOT NULL,
		payload BLOB NOT NULL,
		queued_ms INTEGER NOT NULL
	);`,
	// v5: authenticated anchors (see seal.go): a MAC on every retention
	// checkpoint and the seal of the chain's head, under a key kept outside
	// the database. migrationHooks[5] fills them in the same transaction.
	`ALTER TABLE chain_checkpoints ADD COLUMN mac TEXT;
	CREATE TABLE chain_seal (
		id INTEGER PRIMARY KEY CHECK(id = 1),
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		mac TEXT NOT NULL
	);`,
	// v6: what an edge agent knows of a request while it runs (its tool,
	// parameters and conversation, and the process group its tool runs
	// in), so that an agent started after a crash can audit the run it cut
	// and kill what is left of it (see interrupted.go).
	`ALTER TABLE request_log ADD COLUMN tool TEXT;
	ALTER TABLE request_log ADD COLUMN params TEXT;
	ALTER TABLE request_log ADD COLUMN conversation_id TEXT;
	ALTER TABLE request_log ADD COLUMN pgid INTEGER;
	ALTER TABLE request_log ADD COLUMN pgid_start INTEGER;
	ALTER TABLE request_log ADD COLUMN boot_id TEXT;`,
	// v7: scheduled jobs, their runs, and pending approvals (schema_v7.go).
	migrationV7,
	// v8: the elapsed time an edge agent reported for a call, beside
	// elapsed_ms, now the round trip the writer observed. Hashed only when
	// not NULL (auditchain.Table.Optional), so every older row keeps its
	// hash and the chain verifies across the upgrade.
	`ALTER TABLE tool_calls ADD COLUMN agent_elapsed_ms INTEGER CHECK(agent_elapsed_ms IS NULL OR agent_elapsed_ms >= 0);`,
	// v9: the report summaries, kept as records are written (schema_v9.go).
	migrationV9,
	// v10: job_runs by scheduled instant, for the runs of every job
	// (schema_v10.go).
	migrationV10,
	// v11: skipped job runs counted per job rather than recorded one by
	// one (schema_v11.go).
	migrationV11,
	// v12: the request log bounded by bytes, with a stub of each dropped
	// report (schema_v12.go).
	migrationV12,
}

// migrationHooks holds, by the version a migration takes the database to,
// Go code run after that migration's SQL in its transaction, for steps SQL
// cannot do (the key never enters the database) or would do at too high a
// cost (v12's older reports).
var migrationHooks = map[int]func(ctx context.Context, tx dbtx, key auditchain.Key) error{
	sealVersion:       adoptV5,
	requestLogVersion: adoptV12,
}

// SchemaVersion is the schema version this build migrates databases to.
var SchemaVersion = len(migrations)

// migrate brings db to the newest version, len(migrations), in one
// transaction, and refuses a database whose version is newer than this
// build knows. One transaction makes an upgrade all or nothing and a fresh
// file one commit instead of one per step (each an fsync: on an SD card,
// milliseconds of start-up apiece). The version is read inside the
// transaction (which holds the write lock, see _txlock in writerDSN), so
// two processes opening a fresh file cannot both apply the same steps.
// An upgrade of an existing database is logged to log (upgradenotice.go).
func migrate(ctx context.Context, db *sql.DB, key auditchain.Key, log *slog.Logger) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() // no-op after Commit

	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case version > len(migrations):
		return fmt.Errorf("%w: database has schema version %d, this build knows up to %d", ErrSchemaTooNew, version, len(migrations))
	case version == len(migrations):
		return nil
	}
	fresh := false
	var notice *upgradeNotice
	if version == 0 {
		var objects int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&objects); err != nil {
			return fmt.Errorf("read schema: %w", err)
		}
		fresh = objects == 0
	}
	if fresh {
		// Creating the schema touches every table and index once: with
		// the writer's cache that would fill the cache for good (SQLite's
		// allocator keeps what it once held), where steady writes touch
		// only the right edges. A small cache for this transaction spills
		// what does not fit to the log instead; the writer gets its own
		// cache back after the commit. (An upgrade keeps the writer's
		// cache: its backfills read whole tables.)
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = %d", -createCacheKiB)); err != nil {
			return fmt.Errorf("bound the schema's cache: %w", err)
		}
		err = createFresh(ctx, tx, key)
	} else {
		notice = startUpgradeNotice(log, version, len(migrations))
		defer notice.stop()
		err = migrateSteps(ctx, tx, version, key)
	}
	if err != nil {
		return err
	}
	// PRAGMA takes no bound parameters; the version is an int we computed.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("set schema version %d: %w", len(migrations), err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit schema version %d: %w", len(migrations), err)
	}
	if notice != nil {
		notice.done()
	}
	if fresh {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = %d", -writerCacheKiB)); err != nil {
			return fmt.Errorf("restore the writer's cache: %w", err)
		}
	}
	return nil
}

// migrateSteps applies the migrations after version, each with its hook.
func migrateSteps(ctx context.Context, tx dbtx, version int, key auditchain.Key) error {
	for v := version; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
		if hook := migrationHooks[v+1]; hook != nil {
			if err := hook(ctx, tx, key); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
			}
		}
	}
	return nil
}
