package cold

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// schemaVersion is the cold schema this build writes, kept in the cold
// database's schema_meta table: 1 plus the steps in upgrades.
const schemaVersion = 3

// SummariesVersion is the first cold schema with the report summaries.
const SummariesVersion = 3

// upgrades take a cold database from version i+1 to i+2; they are only
// ever appended.
var upgrades = []string{
	// v2: the elapsed time an edge agent reported, beside the one the
	// writer observed (warm schema v8).
	`ALTER TABLE tool_calls ADD COLUMN agent_elapsed_ms INTEGER`,
	// v3: the report summaries of warm schema v9, so the ready-made
	// reports run here as on warm. Triggers keep them: a shipped batch
	// inserts its records and their summary changes in one transaction,
	// and a record already there (ON CONFLICT DO NOTHING) fires none, so a
	// batch shipped twice counts once. Nothing deletes cold records. The
	// summaries of the records already held are built in the upgrade.
	`DROP INDEX IF EXISTS tool_calls_agent_tool;
	` + sqlite.SummaryTablesSQL + summaryTriggers + sqlite.SummaryBackfillSQL,
}

// summaryTriggers keep the cold tier's report summaries as records are
// inserted, as the warm committer does per transaction (one row at a
// time here: the server runs them, beside its inserts). Cold records are
// never deleted; one deleted by hand stays counted (and, shipped again,
// does not fail on its ranking row).
const summaryTriggers = `CREATE TRIGGER tool_calls_summaries AFTER INSERT ON tool_calls BEGIN
		INSERT INTO report_tools (tool, agent, day, calls, errors, elapsed_sum, elapsed_max)
		VALUES (NEW.tool, coalesce(NEW.agent_id, ''), substr(NEW.ts, 1, 10), 1, NEW.status = 'error', NEW.elapsed_ms, NEW.elapsed_ms)
		ON CONFLICT (tool, agent, day) DO UPDATE SET calls = calls + 1, errors = errors + excluded.errors,
			elapsed_sum = elapsed_sum + excluded.elapsed_sum, elapsed_max = max(elapsed_max, excluded.elapsed_max);
		INSERT INTO report_errors (error_type, tool, day, calls)
		SELECT coalesce(NEW.error_type, ''), NEW.tool, substr(NEW.ts, 1, 10), 1 WHERE NEW.status = 'error'
		ON CONFLICT (error_type, tool, day) DO UPDATE SET calls = calls + 1;
	END;
	CREATE TRIGGER tool_calls_slowest AFTER INSERT ON tool_calls
	WHEN (SELECT count(*) FROM report_slowest WHERE day = substr(NEW.ts, 1, 10)) < 20
		OR (-NEW.elapsed_ms, NEW.ts, NEW.record_id) < (SELECT -elapsed_ms, ts, record_id FROM report_slowest
			WHERE day = substr(NEW.ts, 1, 10) ORDER BY elapsed_ms DESC, ts, record_id LIMIT 1 OFFSET 19)
	BEGIN
		INSERT OR IGNORE INTO report_slowest (day, elapsed_ms, ts, record_id)
		VALUES (substr(NEW.ts, 1, 10), NEW.elapsed_ms, NEW.ts, NEW.record_id);
		DELETE FROM report_slowest WHERE day = substr(NEW.ts, 1, 10) AND (elapsed_ms, ts, record_id) IN (
			SELECT elapsed_ms, ts, record_id FROM report_slowest WHERE day = substr(NEW.ts, 1, 10)
			ORDER BY elapsed_ms DESC, ts, record_id LIMIT -1 OFFSET 20);
	END;
	CREATE TRIGGER llm_calls_summaries AFTER INSERT ON llm_calls BEGIN
		INSERT INTO report_conversation_tokens (conversation, requests, input_tokens, output_tokens, latency_ms, errors)
		VALUES (coalesce(NEW.conversation_id, ''), 1, NEW.input_tokens, NEW.output_tokens, NEW.latency_ms, NEW.status = 'error')
		ON CONFLICT (conversation) DO UPDATE SET requests = requests + 1, input_tokens = input_tokens + excluded.input_tokens,
			output_tokens = output_tokens + excluded.output_tokens, latency_ms = latency_ms + excluded.latency_ms,
			errors = errors + excluded.errors;
		INSERT INTO report_day_tokens (day, provider, model, requests, input_tokens, output_tokens)
		VALUES (substr(NEW.ts, 1, 10), NEW.provider, coalesce(NEW.model, ''), 1, NEW.input_tokens, NEW.output_tokens)
		ON CONFLICT (day, provider, model) DO UPDATE SET requests = requests + 1,
			input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens;
	END;
	`

// schema creates the cold tables. They hold the warm tables' chained
// columns (see persistence/auditchain) plus chain_id, which tells the nodes
// apart; record_id is the primary key that makes shipping idempotent.
// chains records, per chain, where the cold copy starts (first_seq and the
// hash before it, a warm retention checkpoint when the node pruned before
// the cold tier existed) and how far it goes.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS chains (
		chain_id TEXT PRIMARY KEY,
		first_seq INTEGER NOT NULL,
		first_prev TEXT NOT NULL,
		shipped_seq INTEGER NOT NULL,
		head_hash TEXT NOT NULL,
		updated_ts TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS tool_calls (
		record_id TEXT PRIMARY KEY,
		chain_id TEXT NOT NULL,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		side TEXT NOT NULL,
		conversation_id TEXT,
		request_id TEXT,
		call_id TEXT,
		agent_id TEXT,
		tool TEXT NOT NULL,
		params TEXT CHECK(params IS NULL OR json_valid(params)),
		status TEXT NOT NULL,
		error_type TEXT,
		error TEXT,
		exit_code INTEGER,
		elapsed_ms INTEGER NOT NULL,
		result_excerpt TEXT,
		result_bytes INTEGER NOT NULL,
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		UNIQUE(chain_id, chain_seq)
	)`,
	`CREATE INDEX IF NOT EXISTS tool_calls_ts_ms ON tool_calls(ts_ms)`,
	`CREATE INDEX IF NOT EXISTS tool_calls_agent_tool ON tool_calls(agent_id, tool)`,
	`CREATE INDEX IF NOT EXISTS tool_calls_conversation_id ON tool_calls(conversation_id)`,
	`CREATE TABLE IF NOT EXISTS llm_calls (
		record_id TEXT PRIMARY KEY,
		chain_id TEXT NOT NULL,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		conversation_id TEXT,
		provider TEXT NOT NULL,
		model TEXT,
		input_tokens INTEGER NOT NULL,
		output_tokens INTEGER NOT NULL,
		latency_ms INTEGER NOT NULL,
		status TEXT NOT NULL,
		error_type TEXT,
		error TEXT,
		iteration INTEGER NOT NULL,
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		UNIQUE(chain_id, chain_seq)
	)`,
	`CREATE INDEX IF NOT EXISTS llm_calls_ts_ms ON llm_calls(ts_ms)`,
	`CREATE INDEX IF NOT EXISTS llm_calls_conversation_id ON llm_calls(conversation_id)`,
	`CREATE TABLE IF NOT EXISTS messages (
		record_id TEXT PRIMARY KEY,
		chain_id TEXT NOT NULL,
		conversation_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		role TEXT NOT NULL,
		body TEXT NOT NULL CHECK(json_valid(body)),
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		UNIQUE(chain_id, chain_seq)
	)`,
	`CREATE INDEX IF NOT EXISTS messages_conversation ON messages(conversation_id, seq)`,
	`CREATE INDEX IF NOT EXISTS messages_ts_ms ON messages(ts_ms)`,
	`CREATE TABLE IF NOT EXISTS events (
		record_id TEXT PRIMARY KEY,
		chain_id TEXT NOT NULL,
		ts TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		node TEXT NOT NULL,
		agent_id TEXT,
		kind TEXT NOT NULL,
		detail TEXT CHECK(detail IS NULL OR json_valid(detail)),
		chain_seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		UNIQUE(chain_id, chain_seq)
	)`,
	`CREATE INDEX IF NOT EXISTS events_ts_ms ON events(ts_ms)`,
	// The warm store keeps a conversations summary table; in cold it is
	// derived, so the same report queries run on both tiers.
	`CREATE VIEW IF NOT EXISTS conversations AS
		SELECT conversation_id, min(ts) AS first_ts, min(ts_ms) AS first_ms,
			max(ts) AS last_ts, max(ts_ms) AS last_ms, max(seq) AS message_count
		FROM messages GROUP BY conversation_id`,
	`INSERT INTO schema_meta (key, value) VALUES ('version', '1') ON CONFLICT (key) DO NOTHING`,
}

// fullSchema is schema with every upgrade: the current cold schema.
var fullSchema = append(append([]string(nil), schema...), upgrades...)

// ensureSchema creates the cold tables when missing, in one transaction, and
// refuses a database whose cold schema is newer than this build.
func ensureSchema(ctx context.Context, db *sql.DB) error {
	var version int
	err := db.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM schema_meta WHERE key = 'version'`).Scan(&version)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "no such table") {
		// Unreachable, unauthorized, ...: say so rather than fail later.
		return fmt.Errorf("read cold schema version: %w", err)
	}
	if err == nil && version > schemaVersion {
		return fmt.Errorf("%w: cold schema version %d, this build knows up to %d", ErrSchemaTooNew, version, schemaVersion)
	}
	if err == nil && version == schemaVersion {
		return nil
	}
	return inTx(ctx, db, true, func(conn *sql.Conn) error {
		for _, stmt := range schema {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create cold schema: %w", err)
			}
		}
		// Read again inside the transaction: another node may have
		// upgraded the database meanwhile.
		if err := conn.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM schema_meta WHERE key = 'version'`).Scan(&version); err != nil {
			return fmt.Errorf("read cold schema version: %w", err)
		}
		for v := version; v < schemaVersion; v++ {
			if _, err := conn.ExecContext(ctx, upgrades[v-1]); err != nil {
				return fmt.Errorf("upgrade cold schema to version %d: %w", v+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx, `UPDATE schema_meta SET value = ? WHERE key = 'version'`, fmt.Sprint(schemaVersion)); err != nil {
			return fmt.Errorf("upgrade cold schema: %w", err)
		}
		return nil
	})
}
