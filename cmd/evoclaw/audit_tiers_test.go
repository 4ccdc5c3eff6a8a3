package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// shipAll ships every warm record of dir to the cold tier at url.
func shipAll(t *testing.T, dir, url, token string) {
	t.Helper()
	warm, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	c, err := cold.Open(cold.Config{URL: url, AuthToken: token, PollInterval: 10 * time.Millisecond, MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sh := cold.NewShipper(warm, c, nil)
	if err := sh.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		head, _ := warm.HeadSeq(context.Background())
		shipped, _ := warm.ShippedSeq(context.Background())
		if head > 0 && head == shipped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("shipping did not finish: %+v", sh.Status())
		}
		sh.Kick()
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}

func TestAuditTiersCommands(t *testing.T) {
	pub, priv := sqldtest.NewKey(t)
	srv := sqldtest.Start(t, sqldtest.Options{JWTKey: pub})
	token := sqldtest.Token(t, priv, map[string]any{"a": "rw"})
	t.Setenv(cold.TokenEnv, token)
	dir := auditDir(t, 3)
	shipAll(t, dir, srv.URL(), token)
	// Prune the first two from warm: they are in cold.
	warm, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warm.Prune(context.Background(), sqlite.Retention{ColdTier: true, Batch: 2}, time.Now().Add(30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	warm.Close()
	tests := []struct {
		tier string
		want string
	}{{"warm", "1\n"}, {"cold", "3\n"}, {"all", "3\n"}}
	for _, tt := range tests {
		code, out, errOut := runArgs("audit", "sql", "--data-dir", dir, "--tier", tt.tier, "--cold-url", srv.URL(), "--csv", "SELECT count(*) AS n FROM tool_calls")
		if code != 0 || !strings.HasSuffix(out, tt.want) {
			t.Errorf("tier %s: exit %d, out %q, err %s", tt.tier, code, out, errOut)
		}
		if strings.Contains(out+errOut, token) {
			t.Fatal("the token appears in the output")
		}
	}
	code, out, errOut := runArgs("audit", "report", "tools", "--data-dir", dir, "--tier", "cold", "--cold-url", srv.URL(), "--csv")
	if code != 0 || !strings.Contains(out, "shell,edge-1,3,0,0,1,2\n") {
		t.Fatalf("tools report on cold: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runArgs("audit", "sql", "--data-dir", dir, "--tier", "cold", "--cold-url", srv.URL(), "DELETE FROM tool_calls")
	if code != 1 || !strings.Contains(errOut, "read-only") {
		t.Fatalf("write on cold: exit %d, %s", code, errOut)
	}
	code, _, errOut = runArgs("audit", "sql", "--data-dir", dir, "--tier", "all", "--cold-url", srv.URL(), "UPDATE tool_calls SET tool = 'x'")
	if code != 1 || !strings.Contains(errOut, "read-only") {
		t.Fatalf("write on all: exit %d, %s", code, errOut)
	}
	code, out, errOut = runArgs("audit", "verify", "--data-dir", dir, "--tier", "all", "--cold-url", srv.URL())
	if code != 0 || !strings.Contains(out, "warm: ok") || !strings.Contains(out, "cold: ok") || !strings.Contains(out, "the tiers join") {
		t.Fatalf("verify all: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runArgs("audit", "verify", "--data-dir", dir, "--tier", "cold"); code != 2 || !strings.Contains(errOut, "--cold-url") {
		t.Fatalf("cold without a URL: exit %d, %s", code, errOut)
	}
	if code, _, _ := runArgs("audit", "verify", "--data-dir", dir, "--tier", "lukewarm"); code != 2 {
		t.Fatalf("bad tier: exit %d", code)
	}
}

// Records warm retention deleted as shipped that the cold tier does not
// hold (it was replaced by an empty database after they were shipped):
// they are in neither tier, and `audit verify --tier all` says so rather
// than that the tiers join, though the cold copy verifies from where it
// starts and joins warm there.
func TestAuditVerifyPrunedAsShippedButNotCold(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	dir := auditDir(t, 5)
	ctx := context.Background()
	warm, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The cold tier that held them is gone; the mark still says shipped.
	if err := warm.SetShipped(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if res, err := warm.Prune(ctx, sqlite.Retention{ColdTier: true}, time.Now().Add(30*24*time.Hour)); err != nil || res.UpToSeq != 5 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	for range 2 {
		if err := warm.RecordToolCall(ctx, persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, Tool: "shell", Status: persistence.StatusSuccess}); err != nil {
			t.Fatal(err)
		}
	}
	warm.Close()
	shipAll(t, dir, srv.URL(), "")
	code, out, errOut := runArgs("audit", "verify", "--data-dir", dir, "--tier", "all", "--cold-url", srv.URL())
	if code != 1 || !strings.Contains(out, "chain_seq 1..5 were deleted from warm as shipped") || !strings.Contains(out, "cold copy starts at chain_seq 6") {
		t.Fatalf("verify --tier all: exit %d\n%s%s", code, out, errOut)
	}
}
