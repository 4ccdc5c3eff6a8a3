// Package sqlitedrivers measures the pure-Go SQLite the project uses
// (modernc.org/sqlite) against the C SQLite through cgo
// (github.com/mattn/go-sqlite3) on the same statements: an audit row of
// tool_calls' shape into a table with its indexes and a summary upsert,
// committed in transactions of 1, 16 and 256 rows, WAL and
// synchronous=NORMAL. It is a module of its own so that the project does
// not depend on the cgo driver; docs/PERFORMANCE.md ("Why the issue's
// targets are still out of reach") gives the command and the numbers.
package sqlitedrivers

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	_ "modernc.org/sqlite"
)

// ddl is tool_calls as the store creates it, with its chain columns
// and a summary table.
const ddl = `CREATE TABLE tool_calls (
	id INTEGER PRIMARY KEY, record_id TEXT NOT NULL UNIQUE, ts TEXT NOT NULL, ts_ms INTEGER NOT NULL,
	node TEXT NOT NULL, side TEXT NOT NULL CHECK(side IN ('orchestrator','edge')), conversation_id TEXT,
	request_id TEXT, call_id TEXT, agent_id TEXT, tool TEXT NOT NULL,
	params TEXT CHECK(params IS NULL OR json_valid(params)), status TEXT NOT NULL CHECK(status IN ('success','error')),
	error_type TEXT, error TEXT, exit_code INTEGER, elapsed_ms INTEGER NOT NULL, result_excerpt TEXT,
	result_bytes INTEGER NOT NULL, chain_seq INTEGER, chain_hash BLOB);
CREATE INDEX tool_calls_ts_ms ON tool_calls(ts_ms);
CREATE INDEX tool_calls_agent_tool ON tool_calls(agent_id, tool);
CREATE INDEX tool_calls_request_id ON tool_calls(request_id);
CREATE INDEX tool_calls_conversation_id ON tool_calls(conversation_id);
CREATE TABLE summary (agent_id TEXT, tool TEXT, calls INTEGER, PRIMARY KEY(agent_id, tool));`

// open opens a new database with driver on one connection.
func open(b *testing.B, driver string) *sql.DB {
	db, err := sql.Open(driver, filepath.Join(b.TempDir(), "a.db"))
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA cache_size=-256", "PRAGMA busy_timeout=5000"} {
		if _, err := db.Exec(p); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Exec(ddl); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkCommit is ns per row, each driver and batch size.
func BenchmarkCommit(b *testing.B) {
	for _, driver := range []string{"sqlite", "sqlite3"} {
		for _, n := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("%s/batch=%d", map[string]string{"sqlite": "modernc", "sqlite3": "cgo"}[driver], n), func(b *testing.B) {
				db := open(b, driver)
				ins, err := db.Prepare(`INSERT INTO tool_calls (record_id, ts, ts_ms, node, side, conversation_id, request_id, call_id, agent_id, tool, params, status, error_type, error, exit_code, elapsed_ms, result_excerpt, result_bytes, chain_seq, chain_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
				if err != nil {
					b.Fatal(err)
				}
				up, err := db.Prepare(`INSERT INTO summary VALUES (?, ?, 1) ON CONFLICT(agent_id, tool) DO UPDATE SET calls = calls + 1`)
				if err != nil {
					b.Fatal(err)
				}
				hash := make([]byte, 32)
				b.ResetTimer()
				i := 0
				for i < b.N {
					tx, err := db.Begin()
					if err != nil {
						b.Fatal(err)
					}
					for j := 0; j < n && i < b.N; j++ {
						if _, err := tx.Stmt(ins).Exec(fmt.Sprintf("rec-%016x", i), "2026-11-29T13:00:00.000Z", int64(1795957560000+i), "node1", "edge",
							fmt.Sprintf("conv-%d", i%50), fmt.Sprintf("req-%016x", i), "call-1", fmt.Sprintf("agent-%d", i%20), "bash",
							`{"command":"uptime"}`, "success", nil, nil, 0, 3, " 13:00:00 up 1 day", 40, i, hash); err != nil {
							b.Fatal(err)
						}
						if _, err := tx.Stmt(up).Exec(fmt.Sprintf("agent-%d", i%20), "bash"); err != nil {
							b.Fatal(err)
						}
						i++
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
