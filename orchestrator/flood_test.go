package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// usedAuditBytes is the audit database's size in pages in use, as a reader
// sees it (WAL included).
func usedAuditBytes(t *testing.T, n *Node) int64 {
	t.Helper()
	res := queryAudit(t, n, `SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size())`)
	v, err := strconv.ParseInt(fmt.Sprint(res.Rows[0][0]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func countEvents(t *testing.T, n *Node, where string) int {
	t.Helper()
	res := queryAudit(t, n, `SELECT count(*) FROM events WHERE `+where)
	c, _ := strconv.Atoi(fmt.Sprint(res.Rows[0][0]))
	return c
}

// TestAFloodingAgentCostsBoundedDiskAndLog: an authenticated agent sends
// thousands of reports with made-up request_ids and 3 KB results, garbage,
// and presence flips, as fast as loopback takes them, while another agent
// serves a chat's tool call. The audit database and the log grow by a
// bounded amount, and the chat succeeds.
func TestAFloodingAgentCostsBoundedDiskAndLog(t *testing.T) {
	const (
		lateReports = 4000
		garbage     = 1000
		flips       = 500
		// What the flood may add: a few dozen bounded events, far from the
		// 12 MB of 4000 stored 3 KB excerpts.
		maxDBGrowth  = 512 << 10
		maxLogGrowth = 32 << 10
	)
	dir := t.TempDir()
	p := mustScript(t, noopTranscript)
	cfg := Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0"}}
	// A limit the flood surely passes, whatever the machine's speed (the
	// defaults sit far above a busy agent's answers).
	cfg.Inbound.MessagesPerSecond, cfg.Inbound.MessageBurst = 50, 200
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	floodPW := addAgentUser(t, cfg, "pi-flood")
	goodPW := addAgentUser(t, cfg, "bench-edge")
	var logs testenv.Buffer
	node := startNode(t, cfg, Options{Provider: p, Logger: logs.Logger(slog.LevelInfo)})
	startAgent(t, node, dir, testAgent{Username: "bench-edge", Password: goodPW, Wait: 15 * time.Second})
	ctx := context.Background()
	if ans, err := node.Chat(ctx, "before", "go"); err != nil || ans.Text != "ok" {
		t.Fatalf("chat before the flood: %v %+v", err, ans)
	}

	dbBefore, logBefore := usedAuditBytes(t, node), len(logs.String())
	addr := strings.TrimPrefix(node.BrokerURL(), "tcp://")
	flood, rc := mqtttest.DialRaw(t, addr, mqtttest.RawConnect{ClientID: "evoclaw-pi-flood", Username: "pi-flood", Password: floodPW})
	if rc != 0 {
		t.Fatalf("CONNACK %d", rc)
	}
	result := strings.Repeat("r", 3<<10)
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		for i := range lateReports {
			mqtttest.RawPublish(t, flood, wire.ReportsTopic("pi-flood"), fmt.Sprintf(
				`{"agent_id":"pi-flood","report_type":"result","payload":{"request_id":"made-up-%d","tool":"x","status":"success","result":%q}}`, i, result), false)
			if i < garbage {
				mqtttest.RawPublish(t, flood, wire.ReportsTopic("pi-flood"), "\x00garbage "+result, false)
			}
			if i < flips {
				st := []string{wire.PresenceOnline, wire.PresenceOffline}[i%2]
				mqtttest.RawPublish(t, flood, wire.StatusTopic("pi-flood"), fmt.Sprintf(`{"agent_id":"pi-flood","status":%q}`, st), false)
			}
		}
	}()
	// The node keeps serving the good agent during the flood.
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	if ans, err := node.Chat(cctx, "during", "go"); err != nil || ans.Text != "ok" {
		t.Fatalf("chat during the flood: %v %+v", err, ans)
	}
	wg.Wait()
	t.Logf("flood of %d reports (%d late 3 KB results, %d garbage, %d presence flips) sent in %s",
		lateReports+garbage+flips, lateReports, garbage, flips, time.Since(start).Round(time.Millisecond))
	// Wait until the node has taken it all in: the events stop growing.
	last, stable := -1, 0
	testenv.Eventually(t, 60*time.Second, func() bool {
		n := countEvents(t, node, "1")
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 10
	}, "the node to finish storing the flood's events")
	dbGrowth, logGrowth := usedAuditBytes(t, node)-dbBefore, len(logs.String())-logBefore
	t.Logf("audit db grew %d bytes; log grew %d bytes; events: %d late_result, %d invalid_message, %d presence",
		dbGrowth, logGrowth, countEvents(t, node, "kind = 'late_result'"), countEvents(t, node, "kind = 'invalid_message'"),
		countEvents(t, node, "kind IN ('agent_online', 'agent_offline') AND agent_id = 'pi-flood'"))
	reg := prometheus.NewRegistry()
	reg.MustRegister(newInboundCollector(node))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "agent" {
					name += "/" + l.GetValue()
				}
			}
			got[name] = m.GetCounter().GetValue()
		}
	}
	t.Logf("metrics: %v", got)
	if got["evoclaw_inbound_dropped_messages_total/pi-flood"] == 0 || got["evoclaw_audit_events_suppressed_total"] == 0 {
		t.Errorf("the flood is not counted in the metrics: %v", got)
	}
	if got["evoclaw_inbound_dropped_messages_total/bench-edge"] != 0 {
		t.Errorf("the good agent's messages were dropped: %v", got)
	}
	if dbGrowth > maxDBGrowth {
		t.Errorf("audit db grew by %d bytes under the flood, want at most %d", dbGrowth, maxDBGrowth)
	}
	if logGrowth > maxLogGrowth {
		t.Errorf("log grew by %d bytes under the flood, want at most %d", logGrowth, maxLogGrowth)
	}
	if ans, err := node.Chat(ctx, "after", "go"); err != nil || ans.Text != "ok" {
		t.Fatalf("chat after the flood: %v %+v", err, ans)
	}
}
