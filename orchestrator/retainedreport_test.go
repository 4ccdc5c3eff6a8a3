package orchestrator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestRetainedReportIgnoredByTheNode: behind mosquitto, whose ACL cannot
// refuse a retained publish on a topic a client may write, an agent's
// report published retained was handed to the node at every start of its
// session: a late result each time, and the agent, long gone, online. The
// node drops a report delivered retained (an invalid_message event) and
// still takes the live ones.
func TestRetainedReportIgnoredByTheNode(t *testing.T) {
	url, _ := mqtttest.StartMosquittoConf(t, mqtttest.AnonymousConf)
	addr := strings.TrimPrefix(url, "tcp://")
	conn, code := mqtttest.DialRaw(t, addr, mqtttest.RawConnect{ClientID: "evoclaw-pi-gone"})
	if code != 0 {
		t.Fatalf("CONNACK %d", code)
	}
	report := `{"agent_id":"pi-gone","agent_type":"monitor","report_type":"result","payload":{"status":"success","tool":"x","result":"r","request_id":%q},"timestamp":1796009239}`
	mqtttest.RawPublish(t, conn, wire.ReportsTopic("pi-gone"), fmt.Sprintf(report, "kept-1"), true)
	// Packets are handled in order: the SUBACK says the broker has it.
	mqtttest.RawSubscribe(t, conn, "evoclaw/unrelated")
	conn.Close()

	cfg, _ := loadConfig(t, t.TempDir(), fmt.Sprintf("data_dir = \"data\"\n[broker]\nurl = %q\n", url), "")
	n := startNode(t, cfg, Options{})
	testenv.Eventually(t, 10*time.Second, n.client.Connected, "the node's MQTT session")
	live, code := mqtttest.DialRaw(t, addr, mqtttest.RawConnect{ClientID: "evoclaw-pi-live"})
	if code != 0 {
		t.Fatalf("CONNACK %d", code)
	}
	defer live.Close()
	mqtttest.RawPublish(t, live, wire.ReportsTopic("pi-live"), strings.ReplaceAll(fmt.Sprintf(report, "live-1"), "pi-gone", "pi-live"), false)
	testenv.Eventually(t, 10*time.Second, func() bool {
		return countEvents(t, n, `kind = 'late_result' AND json_extract(detail, '$.request_id') = 'live-1'`) == 1
	}, "the live report's late_result")
	testenv.Eventually(t, 10*time.Second, func() bool {
		return countEvents(t, n, `kind = 'invalid_message' AND agent_id = 'pi-gone' AND detail LIKE '%delivered retained%'`) == 1
	}, "the retained report's invalid_message")
	if c := countEvents(t, n, `agent_id = 'pi-gone' AND kind <> 'invalid_message'`); c != 0 {
		t.Fatalf("%d events of pi-gone besides the dropped report (a late result, presence), want none", c)
	}
	for _, a := range n.Catalog().Online() {
		if a.ID == "pi-gone" {
			t.Fatal("pi-gone, heard from only through a retained report, is online")
		}
	}
}
