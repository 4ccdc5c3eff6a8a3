package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// TestAuditCommandsTakeTheNodesConfig: with --config the audit commands,
// logs and metrics take the data directory and the cold tier's URL from
// the node's evoclaw.toml (relative paths against the file); flags win.
func TestAuditCommandsTakeTheNodesConfig(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	t.Setenv(coldURLEnv, "http://127.0.0.1:1") // the file's URL wins over the environment
	dir := auditDir(t, 3)
	shipAll(t, dir, srv.URL(), "")
	confDir := filepath.Dir(dir)
	rel, err := filepath.Rel(confDir, dir)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(confDir, "evoclaw.toml")
	body := "data_dir = \"" + rel + "\"\n[audit.cold]\nurl = \"" + srv.URL() + "\"\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // nowhere near the data directory
	for _, tier := range []string{"warm", "cold", "all"} {
		code, out, errOut := runArgs("audit", "sql", "--config", conf, "--tier", tier, "--csv", "SELECT count(*) AS n FROM tool_calls")
		if code != 0 || !strings.HasSuffix(out, "3\n") {
			t.Errorf("sql --tier %s: exit %d, out %q, err %s", tier, code, out, errOut)
		}
	}
	if code, out, errOut := runArgs("audit", "verify", "--config", conf, "--tier", "all"); code != 0 || !strings.Contains(out, "the tiers join") {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runArgs("audit", "report", "tools", "--config", conf, "--tier", "cold", "--csv"); code != 0 || !strings.Contains(out, "shell,") {
		t.Errorf("report: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runArgs("audit", "status", "--config", conf, "--json"); code != 0 || !strings.Contains(out, `"records": 3`) {
		t.Errorf("status: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runArgs("logs", "--config", conf, "--filter", "tool"); code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("logs: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runArgs("metrics", "--tools", "--config", conf, "--csv"); code != 0 || !strings.Contains(out, "shell,") {
		t.Errorf("metrics: exit %d\n%s%s", code, out, errOut)
	}
	// Flags win: another data directory, another (unreachable) cold URL.
	empty := t.TempDir()
	if code, _, errOut := runArgs("audit", "status", "--config", conf, "--data-dir", empty); code == 0 {
		t.Errorf("--data-dir did not win over the file: %s", errOut)
	}
	if code, _, _ := runArgs("audit", "sql", "--config", conf, "--tier", "cold", "--cold-url", "http://127.0.0.1:1", "SELECT 1"); code == 0 {
		t.Error("--cold-url did not win over the file")
	}
	if code, _, errOut := runArgs("audit", "status", "--config", filepath.Join(empty, "missing.toml")); code != 1 || !strings.Contains(errOut, "missing.toml") {
		t.Errorf("missing config: exit %d, %s", code, errOut)
	}
}
