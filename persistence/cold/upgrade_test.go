package cold

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// A cold database of schema v1 (made by an evoclaw before
// agent_elapsed_ms) is upgraded by the first shipper of this build; rows
// without the agent's elapsed time and one with it verify there, and the
// value is covered by its row's hash.
func TestColdSchemaV1Upgrades(t *testing.T) {
	t.Parallel()
	srv := sqldtest.Start(t, sqldtest.Options{})
	ctx := context.Background()
	c := openCold(t, srv.URL(), "")
	// The v1 schema as that evoclaw made it.
	for _, stmt := range schema {
		if _, err := c.db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	var v string
	if err := c.db.QueryRowContext(ctx, `SELECT value FROM schema_meta WHERE key = 'version'`).Scan(&v); err != nil || v != "1" {
		t.Fatalf("cold schema %q, %v", v, err)
	}
	warm, path := openWarm(t)
	fill(t, warm, 4)
	ms := int64(7)
	if err := warm.RecordToolCall(ctx, persistence.ToolCall{Node: "n1", Side: persistence.SideOrchestrator, AgentID: "edge-1",
		Tool: "cpu_temp", Status: persistence.StatusSuccess, ElapsedMs: 1200, AgentElapsedMs: &ms}); err != nil {
		t.Fatal(err)
	}
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipper to catch up")
	checkSame(t, c, path, warm.ChainID())
	if err := c.db.QueryRowContext(ctx, `SELECT value FROM schema_meta WHERE key = 'version'`).Scan(&v); err != nil || v != fmt.Sprint(schemaVersion) {
		t.Fatalf("cold schema after shipping %q, %v", v, err)
	}
	_, rows, err := c.Query(ctx, "SELECT count(agent_elapsed_ms), sum(agent_elapsed_ms) FROM tool_calls")
	if err != nil || rows[0][0] != int64(1) || rows[0][1] != int64(7) {
		t.Fatalf("agent_elapsed_ms in cold: %v, %v", rows, err)
	}
	// Edited in cold, the value breaks the chain there.
	if _, err := c.db.ExecContext(ctx, "UPDATE tool_calls SET agent_elapsed_ms = 8 WHERE agent_elapsed_ms = 7"); err != nil {
		t.Fatal(err)
	}
	st, _, err := c.Chain(ctx, warm.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.VerifyChain(ctx, st); err == nil {
		t.Fatal("an edited agent_elapsed_ms verified in cold")
	}
}
