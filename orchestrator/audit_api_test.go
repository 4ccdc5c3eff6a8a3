package orchestrator

import "testing"

// TestAuditSQLPragmas: a pragma that would change the database, its files
// or the node's process is refused as read-only (403), not answered as a
// busy or broken database (503), while the node writes the file; a pragma
// that reads is answered.
func TestAuditSQLPragmas(t *testing.T) {
	_, base, token := consoleNode(t)
	var cases []apiCase
	for _, q := range []string{
		"PRAGMA journal_mode=DELETE",
		"PRAGMA journal_mode=MEMORY",
		"PRAGMA journal_mode=OFF",
		"PRAGMA journal_mode('truncate')",
		"PRAGMA wal_checkpoint(TRUNCATE)",
		"PRAGMA wal_checkpoint",
		"PRAGMA optimize",
		"PRAGMA temp_store_directory = '.'",
		"PRAGMA hard_heap_limit = 1",
		"EXPLAIN PRAGMA journal_mode = DELETE",
	} {
		cases = append(cases, apiCase{name: q, method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": q},
			status: 403, errType: ErrTypePermission, param: "sql"})
	}
	for _, q := range []string{"PRAGMA journal_mode", "PRAGMA table_info(messages)", "PRAGMA quick_check(1)"} {
		cases = append(cases, apiCase{name: q, method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": q}, status: 200})
	}
	runAPICases(t, base, token, cases)
}
