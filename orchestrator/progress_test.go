package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// TestProgressFloodFromAnAgentIsBounded has a peer flood the node with
// progress reports under made-up request ids: beyond the per-agent bound
// they are dropped before the actors, none is audited, and the metrics
// count them.
func TestProgressFloodFromAnAgentIsBounded(t *testing.T) {
	dir := t.TempDir()
	p, err := scripted.Parse([]byte(noopTranscript))
	if err != nil {
		t.Fatal(err)
	}
	node, err := Start(context.Background(), Config{DataDir: filepath.Join(dir, "orch"),
		Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mqtttest.Connect(t, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "evoclaw-liar"})
	const sent = 500
	start := time.Now()
	for i := range sent {
		r, err := wire.NewReport("liar", "", wire.ReportProgress, time.Now().Unix(),
			wire.Progress{RequestID: fmt.Sprintf("made-up-%d", i), Seq: 1, Output: "spam"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		if err := c.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic("liar"), Payload: b, QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	st := node.ProgressStats()
	// The node's inbound limit for any message comes first; what passes it
	// meets the progress bound.
	inboundDropped := func() int64 { _, by := node.in.limits.Dropped(); return int64(by["liar"]) }
	testenv.Eventually(t, 10*time.Second, func() bool { return st.Unknown.Load()+st.RateLimited.Load()+inboundDropped() == sent },
		"every report counted")
	elapsed := time.Since(start)
	if passed, bound := st.Unknown.Load(), int64(ProgressReportsBurst+elapsed.Seconds()*ProgressReportsPerSecond+1); passed > bound || st.RateLimited.Load()+inboundDropped() == 0 {
		t.Fatalf("%d of %d reports passed the bound in %v (at most %d), %d rate limited", passed, sent, elapsed, bound, st.RateLimited.Load())
	}
	res := queryAudit(t, node, `SELECT count(*) FROM events WHERE agent_id = 'liar' AND kind != 'agent_online'`)
	if fmt.Sprint(res.Rows[0][0]) != "0" {
		t.Fatalf("%v events audited for made-up progress", res.Rows)
	}
	rec := httptest.NewRecorder()
	node.metricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	metrics := rec.Body.String()
	for _, want := range []string{`evoclaw_progress_reports_total{node="`, `outcome="rate_limited"`, `outcome="unknown_request"`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %s:\n%s", want, metrics)
		}
	}
}
