package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// auditDir returns a data directory whose audit.db holds n tool calls.
func auditDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	s, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, AgentID: "edge-1", Tool: "shell", Status: persistence.StatusSuccess, ElapsedMs: int64(i)}
		if err := s.RecordToolCall(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errb strings.Builder
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestAuditVerifyCommand(t *testing.T) {
	dir := auditDir(t, 4)
	code, out, errOut := runArgs("audit", "verify", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "4 records verified from genesis") || !strings.Contains(out, "warm: ok") {
		t.Fatalf("intact: exit %d\n%s%s", code, out, errOut)
	}

	tamperDir(t, dir, "UPDATE tool_calls SET elapsed_ms = 0 WHERE chain_seq = 3")
	code, out, errOut = runArgs("audit", "verify", "--data-dir", dir)
	if code != 1 || !strings.Contains(out, "BROKEN") || !strings.Contains(errOut, "chain_seq 3") {
		t.Fatalf("tampered: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	if code, _, errOut := runArgs("audit", "verify", "--data-dir", t.TempDir()); code != 1 || !strings.Contains(errOut, "no database file") {
		t.Fatalf("missing database: exit %d, %s", code, errOut)
	}
	if code, _, _ := runArgs("audit", "frobnicate"); code != 2 {
		t.Fatalf("unknown audit command: exit %d, want 2", code)
	}
}

// audit verify --summaries checks the report summaries against the
// records: ok as written, BROKEN (exit 1) once a summary row is changed
// behind the store's back, while the chain itself still verifies.
func TestAuditVerifySummaries(t *testing.T) {
	dir := auditDir(t, 5)
	code, out, errOut := runArgs("audit", "verify", "--summaries", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "report summaries: ok") {
		t.Fatalf("as written: exit %d\n%s%s", code, out, errOut)
	}
	tamperDir(t, dir, "UPDATE report_tools SET elapsed_max = elapsed_max + 1000")
	if code, out, _ := runArgs("audit", "verify", "--data-dir", dir); code != 0 || !strings.Contains(out, "warm: ok") {
		t.Fatalf("without --summaries the chain alone is checked: exit %d\n%s", code, out)
	}
	code, out, errOut = runArgs("audit", "verify", "--summaries", "--data-dir", dir)
	if code != 1 || !strings.Contains(out, "report summaries: BROKEN") || !strings.Contains(out, "report tools") {
		t.Fatalf("changed summary: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// TestAuditStatusCommand: the status of a warm database; records waiting
// for a cold tier are counted only when one is configured. Before, a node
// without a cold tier was told its records were waiting for one.
func TestAuditStatusCommand(t *testing.T) {
	dir := auditDir(t, 3)
	t.Setenv(coldURLEnv, "")
	tests := []struct {
		name       string
		args       []string
		want, json []string
	}{
		{"no cold tier", nil,
			[]string{"head chain_seq 3", "0 passes", "none configured (--config, --cold-url): nothing is shipped"},
			[]string{`"cold_tier": false`, `"last_prune": null`}},
		{"a cold tier", []string{"--cold-url", "http://127.0.0.1:1"},
			[]string{"head chain_seq 3", "shipped up to chain_seq 0, 3 records waiting"},
			[]string{`"cold_tier": true`, `"unshipped": 3`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runArgs(append([]string{"audit", "status", "--data-dir", dir}, tt.args...)...)
			for _, w := range tt.want {
				if code != 0 || !strings.Contains(out, w) {
					t.Fatalf("exit %d, want %q in\n%s%s", code, w, out, errOut)
				}
			}
			if len(tt.args) == 0 && strings.Contains(out, "waiting") {
				t.Fatalf("records said to wait for a cold tier there is not:\n%s", out)
			}
			code, out, _ = runArgs(append([]string{"audit", "status", "--data-dir", dir, "--json"}, tt.args...)...)
			for _, w := range tt.json {
				if code != 0 || !strings.Contains(out, w) {
					t.Fatalf("json: exit %d, want %q in\n%s", code, w, out)
				}
			}
		})
	}
}

// The reports and metrics --tools read a database an older evoclaw wrote
// as it is (no upgrade, so no summaries): from its records.
func TestReportsReadOlderDatabase(t *testing.T) {
	b, err := os.ReadFile("../../persistence/sqlite/testdata/v5.db")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, orchestrator.AuditFile)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"audit", "report", "tools", "--data-dir", dir, "--csv"},
		{"audit", "report", "slowest", "--data-dir", dir, "--csv"},
		{"metrics", "--tools", "--data-dir", dir, "--csv"},
	} {
		code, out, errOut := runArgs(args...)
		if code != 0 || !strings.HasPrefix(out, "tool,agent,calls,") && !strings.HasPrefix(out, "ts,tool,agent,elapsed_ms,") || strings.Count(out, "\n") < 2 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	res, err := sqlite.QueryReadOnly(context.Background(), path, "PRAGMA user_version")
	if err != nil || res.Rows[0][0] != int64(5) {
		t.Fatalf("schema version after the reports: %v, %v (want 5: read as it is)", res, err)
	}
}
