package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestNodeShipsItsAuditTrailToTheColdTier configures [audit.cold] against
// a real libSQL server: what a chat records reaches it, and the node's
// status says nothing waits.
func TestNodeShipsItsAuditTrailToTheColdTier(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	p, err := scripted.Parse([]byte(`{"name":"c","turns":[{"content":"stored"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0"}}
	cfg.Audit.Cold.URL = srv.URL()
	cfg.Audit.Cold.PollInterval = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := Start(ctx, cfg, Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if ans, err := node.Chat(ctx, "cold", "keep this"); err != nil || ans.Text != "stored" {
		t.Fatalf("chat %+v %v", ans, err)
	}
	res, err := sqlite.QueryReadOnly(ctx, node.AuditPath(), `SELECT count(*) FROM messages WHERE conversation_id = 'cold'`)
	if err != nil || len(res.Rows) != 1 {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool {
		st := node.AuditStatus().Cold
		return st != nil && st.Lag == 0 && st.Shipped >= 3 // node_start, user and assistant messages, llm call
	}, "the cold tier caught up with the warm store")
	if st := node.AuditStatus().Cold; st.LastError != "" {
		t.Fatalf("shipper error: %s", st.LastError)
	}
}
