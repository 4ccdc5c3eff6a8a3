//go:build linux

package attack

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// auditForgeries: an intruder with write access to the audit database
// (not to its key) adds rows with chain_seq 0, NULL or a BLOB, edits or
// deletes rows, adds a column, or deletes the oldest rows behind a
// made-up retention checkpoint. `evoclaw audit verify` must exit non-zero
// for each, and zero for the untouched database.
func auditForgeries(t *testing.T, b *board) {
	c := b.class("forged audit rows (audit verify)", true)
	bin := evoclawtest.Binary(t)
	orig := t.TempDir()
	s, err := sqlite.Open(filepath.Join(orig, "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.RecordToolCall(context.Background(), persistence.ToolCall{Node: "pi", Side: persistence.SideEdge, RequestID: fmt.Sprint("r", i),
			Tool: "shell", Status: persistence.StatusError, ErrorType: "execution_failed", ElapsedMs: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	row := func(seq string) string {
		return `INSERT INTO tool_calls (record_id, ts, ts_ms, node, side, tool, status, elapsed_ms, result_bytes, chain_seq, hash)
			VALUES ('forged-` + fmt.Sprint(len(seq)) + `', '2025-01-01T00:00:00.000000000Z', 1, 'pi', 'edge', 'shell', 'success', 1, 0, ` + seq + `, '` + strings.Repeat("ab", 32) + `')`
	}
	verify := func(dir string) (int, string) {
		out, err := exec.Command(bin, "audit", "verify", "--data-dir", dir).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatalf("run audit verify: %v", err)
		}
		return 0, string(out)
	}
	if code, out := verify(evoclawtest.CopyDir(t, orig, nil)); code != 0 {
		t.Fatalf("audit verify of the untouched database exits %d:\n%s", code, out)
	}
	for _, f := range []struct{ name, sql string }{
		{"row with chain_seq 0", row("0")},
		{"row with chain_seq NULL", row("NULL")},
		{"row with chain_seq a BLOB", row("X'01'")},
		{"row edited", `UPDATE tool_calls SET status = 'success', error_type = NULL WHERE chain_seq = 2`},
		{"newest row deleted", `DELETE FROM tool_calls WHERE chain_seq = (SELECT max(chain_seq) FROM tool_calls)`},
		{"column added (ALTER TABLE)", `ALTER TABLE tool_calls ADD COLUMN note TEXT`},
		{"oldest rows deleted behind a forged checkpoint", `INSERT INTO chain_checkpoints (chain_seq, hash, ts, deleted, reason, mac)
			VALUES (2, '` + strings.Repeat("cd", 32) + `', '2025-01-01T00:00:00Z', 2, 'retention', '` + strings.Repeat("ef", 32) + `');
			DELETE FROM tool_calls WHERE chain_seq <= 2`},
	} {
		dir := evoclawtest.CopyDir(t, orig, nil)
		db, err := sql.Open("sqlite", filepath.Join(dir, "audit.db"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(f.sql)
		db.Close()
		if err != nil {
			t.Fatalf("forge %s: %v", f.name, err)
		}
		code, out := verify(dir)
		c.try(code != 0, f.name+" passed verify")
		if code == 0 {
			t.Logf("%s passed audit verify:\n%s", f.name, out)
		}
	}
}
