package main

import (
	"strings"
	"testing"
)

// TestAuditColdTierNeedsURLFirst: --tier cold or all without a cold URL is
// refused before any work. Before, audit verify --tier all verified the
// warm tier, printed its result, and only then said the URL was missing.
func TestAuditColdTierNeedsURLFirst(t *testing.T) {
	t.Setenv(coldURLEnv, "")
	dir := auditDir(t, 2)
	for _, args := range [][]string{
		{"audit", "verify", "--tier", "all"},
		{"audit", "verify", "--tier", "cold"},
		{"audit", "sql", "--tier", "all", "SELECT 1"},
		{"audit", "report", "tools", "--tier", "all"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runArgs(append(args, "--data-dir", dir)...)
			if code != 2 || out != "" || !strings.Contains(errOut, "needs the cold tier's URL") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2, nothing done, the URL asked for", code, out, errOut)
			}
		})
	}
}
