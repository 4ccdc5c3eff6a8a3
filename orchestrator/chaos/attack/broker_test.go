//go:build linux

package attack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Bounds of what an authenticated agent's floods may cost the node.
const (
	madeUpReports = 2000
	deniedFlood   = 100
	maxDBGrowth   = 512 << 10
	maxLogGrowth  = 32 << 10
)

// brokerAttacks: an authenticated agent publishes on $SYS, on another
// agent's commands (reconnecting after each refusal, with 64 KiB
// payloads), and floods reports with made-up request_ids and 3 KB
// results. Every forbidden publish must cost it its connection, and the
// node's audit database and log must grow by a bounded amount.
func brokerAttacks(t *testing.T, b *board) {
	sys := b.class("$SYS publishes", true)
	denied := b.class("denied publishes (log bounded)", true)
	flood := b.class("made-up report flood (DB bounded)", true)

	var logs testenv.Buffer
	node, pw := rogueNode(t, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	addr := strings.TrimPrefix(node.BrokerURL(), "tcp://")
	connect := func() net.Conn {
		conn, rc := mqtttest.DialRaw(t, addr, mqtttest.RawConnect{ClientID: "evoclaw-pi-rogue", Username: "pi-rogue", Password: pw})
		if rc != 0 {
			t.Fatalf("CONNACK %d", rc)
		}
		return conn
	}

	for _, topic := range []string{"$SYS/broker/clients/connected", "$sys/broker/load", "$SYS", "$SYS/#"} {
		c := connect()
		mqtttest.RawPublish(t, c, topic, "1", true)
		sys.try(mqtttest.RawClosed(c, 5*time.Second), "publish on "+topic)
		c.Close()
	}

	logBefore := len(logs.String())
	big := strings.Repeat("x", 64<<10)
	for i := range deniedFlood {
		c := connect()
		mqtttest.RawPublish(t, c, wire.CommandsTopic("pi-victim"), fmt.Sprintf(`{"command":"tool","request_id":"evil-%d","payload":%q}`, i, big), false)
		denied.try(mqtttest.RawClosed(c, 5*time.Second), fmt.Sprintf("command for another agent #%d", i))
		c.Close()
	}
	logGrowth := len(logs.String()) - logBefore
	denied.try(logGrowth <= maxLogGrowth, fmt.Sprintf("log grew %d bytes for %d refusals", logGrowth, deniedFlood))
	t.Logf("%d denied publishes of 64 KiB grew the log by %d bytes", deniedFlood, logGrowth)

	dbBefore := usedBytes(t, node.AuditPath())
	c := connect()
	result := strings.Repeat("r", 3<<10)
	for i := range madeUpReports {
		mqtttest.RawPublish(t, c, wire.ReportsTopic("pi-rogue"), fmt.Sprintf(
			`{"agent_id":"pi-rogue","report_type":"result","payload":{"request_id":"made-up-%d","tool":"x","status":"success","result":%q}}`, i, result), false)
	}
	c.Close()
	last, stable := -1, 0
	testenv.Eventually(t, 60*time.Second, func() bool {
		n := countRows(t, node.AuditPath(), "events")
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 200 // a second without a new event
	}, "the node to finish storing the flood's events")
	growth := usedBytes(t, node.AuditPath()) - dbBefore
	late := countRows(t, node.AuditPath(), "events WHERE kind = 'late_result'")
	t.Logf("%d made-up 3 KB reports grew the audit database by %d bytes (%d late_result events stored)", madeUpReports, growth, late)
	if late == 0 {
		t.Fatal("no late_result event: the flood never reached the node, so it proves nothing")
	}
	if growth <= maxDBGrowth {
		flood.attempts, flood.held = madeUpReports, madeUpReports
	} else {
		flood.attempts = madeUpReports
		flood.failures = append(flood.failures, fmt.Sprintf("audit database grew %d bytes", growth))
	}
}

// rogueNode starts a node (tune may change its configuration, log is its
// logger) whose broker knows two agents, pi-rogue and pi-victim; it
// returns the node and pi-rogue's password.
func rogueNode(t *testing.T, tune func(*orchestrator.Config), log *slog.Logger) (*orchestrator.Node, string) {
	t.Helper()
	cfg := orchestrator.Config{DataDir: t.TempDir(), Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"}}
	if tune != nil {
		tune(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	pw, err := broker.AddUser(cfg.UsersFilePath(), "pi-rogue", broker.RoleAgent, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broker.AddUser(cfg.UsersFilePath(), "pi-victim", broker.RoleAgent, 4, false); err != nil {
		t.Fatal(err)
	}
	node, err := orchestrator.Start(context.Background(), cfg, orchestrator.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return node, pw
}

// usedBytes is the size of the database at path in pages in use, as a
// reader sees it (WAL included).
func usedBytes(t *testing.T, path string) int64 {
	t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), path,
		`SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size())`)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(fmt.Sprint(res.Rows[0][0]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// countRows counts the rows of table in the database at path.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), path, `SELECT count(*) FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(fmt.Sprint(res.Rows[0][0]))
	return n
}
