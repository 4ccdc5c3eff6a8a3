package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// tamperDir runs stmt on dir's audit database behind the node's back.
func tamperDir(t *testing.T, dir, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, orchestrator.AuditFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt, args...); err != nil {
		t.Fatalf("tamper %q: %v", stmt, err)
	}
}

const forgedInsert = `INSERT INTO tool_calls (record_id, ts, ts_ms, node, side, tool, status, elapsed_ms, result_bytes, chain_seq, hash)
	VALUES (?, '2025-01-01T00:00:00.000000000Z', 1, 'n', 'edge', 'shell', 'success', 1, 0, ?, ?)`

// The exit codes of audit verify: 0 intact, 1 broken (naming the first
// broken record on stderr), 2 usage.
func TestAuditVerifyExitCodes(t *testing.T) {
	dir := auditDir(t, 3)
	if code, out, errOut := runArgs("audit", "verify", "--data-dir", dir); code != 0 || !strings.Contains(out, "warm: ok") {
		t.Fatalf("intact: exit %d\n%s%s", code, out, errOut)
	}
	for _, seq := range []any{int64(0), int64(-1), []byte{1}, nil} {
		d := auditDir(t, 3)
		tamperDir(t, d, forgedInsert, "forged-row", seq, strings.Repeat("ab", 32))
		code, out, errOut := runArgs("audit", "verify", "--data-dir", d)
		if code != 1 || !strings.Contains(out, "BROKEN") || !strings.Contains(errOut, "forged-row") {
			t.Errorf("row with chain_seq %#v: exit %d\nstdout: %s\nstderr: %s", seq, code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"audit", "verify", "--data-dir", dir, "extra"},
		{"audit", "verify", "--no-such-flag"},
		{"audit", "verify", "--data-dir", dir, "--tier", "tepid"},
	} {
		if code, _, errOut := runArgs(args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

// Lines audit verify builds from database content are bounded and carry no
// control characters, whatever a forged row holds.
func TestAuditVerifyOutputBounded(t *testing.T) {
	dir := auditDir(t, 3)
	huge := "forged\n\x1b[31m" + strings.Repeat("x", 100<<10)
	tamperDir(t, dir, forgedInsert, huge, int64(9), strings.Repeat("ab", 32))
	code, out, errOut := runArgs("audit", "verify", "--data-dir", dir)
	if code != 1 {
		t.Fatalf("exit %d\n%.2000s", code, out+errOut)
	}
	for _, line := range strings.Split(out+errOut, "\n") {
		if len(line) > 1024 {
			t.Errorf("a line of %d bytes: %.200q...", len(line), line)
		}
		if strings.ContainsAny(line, "\x1b\r") {
			t.Errorf("a control character in %.200q", line)
		}
	}
}
