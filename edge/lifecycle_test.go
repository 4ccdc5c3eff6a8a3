package edge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestAgentTrailRecordsStartAndStop: an agent's trail has, like a node's,
// its start as the first record of each run (version, host, data dir, the
// broker without credentials) and its stop as the last, saying whether a
// shutdown command or its process ended it; its online status tells the
// node its host and version.
func TestAgentTrailRecordsStartAndStop(t *testing.T) {
	url := mqtttest.StartEmbedded(t)
	dir := t.TempDir()
	cfg := Config{AgentID: "pi-life", DataDir: dir, MQTT: MQTTConf{Broker: url}, Version: "v0.0.0-life-test"}
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no host name here: %v", err)
	}
	var statuses mqtttest.Inbox
	watcher := mqtttest.Connect(t, mqttc.Options{BrokerURL: url, ClientID: "watcher"})
	if err := watcher.Subscribe(wire.StatusTopic("pi-life"), 1, statuses.Handle); err != nil {
		t.Fatal(err)
	}

	// First run: ended by a shutdown command.
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	a.Ready = func() { close(ready) }
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("agent stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("agent not ready")
	}
	var online wire.Status
	testenv.Eventually(t, 5*time.Second, func() bool {
		for _, m := range statuses.All() {
			if s, err := wire.DecodeStatus("pi-life", m.Payload); err == nil && s.Status == wire.PresenceOnline {
				online = s
				return true
			}
		}
		return false
	}, "online status")
	if string(online.Host) != wire.BoundText(host, wire.MaxHostLen) || string(online.Version) != cfg.Version {
		t.Fatalf("online status says host %q version %q, want %q %q", online.Host, online.Version, host, cfg.Version)
	}
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, "pi-life")
	k.Send(`{"command":"shutdown","payload":{},"request_id":"bye-1"}`)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown did not end Run")
	}

	// Second run: ended by its context, as by a signal.
	b, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runAgent(t, b, 10*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	res, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(dir, "audit.db"),
		`SELECT kind, node, agent_id, detail FROM events WHERE kind IN ('agent_start', 'agent_stop') ORDER BY chain_seq`)
	if err != nil {
		t.Fatal(err)
	}
	wantStart := map[string]any{"version": cfg.Version, "host": wire.BoundText(host, wire.MaxHostLen), "data_dir": dir, "broker": url}
	want := []struct {
		kind string
		why  string
	}{{EventAgentStart, ""}, {EventAgentStop, "shutdown command"}, {EventAgentStart, ""}, {EventAgentStop, "stopped by its process"}}
	if len(res.Rows) != len(want) {
		t.Fatalf("events %v, want %d", res.Rows, len(want))
	}
	for i, w := range want {
		row := res.Rows[i]
		var d map[string]any
		if err := json.Unmarshal([]byte(row[3].(string)), &d); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if row[0] != w.kind || row[1] != "pi-life" || row[2] != "pi-life" {
			t.Fatalf("row %d: %v, want %s of pi-life", i, row, w.kind)
		}
		if w.kind == EventAgentStart {
			for k, v := range wantStart {
				if d[k] != v {
					t.Fatalf("row %d: %s = %v, want %v (%v)", i, k, d[k], v, d)
				}
			}
			if d["pid"] != float64(os.Getpid()) {
				t.Fatalf("row %d: pid %v", i, d["pid"])
			}
		} else if d["why"] != w.why {
			t.Fatalf("row %d: why %v, want %s", i, d["why"], w.why)
		}
	}
	// The start is the first record of its run.
	first, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(dir, "audit.db"),
		`SELECT kind FROM events WHERE chain_seq = (SELECT min(chain_seq) FROM events)`)
	if err != nil || len(first.Rows) != 1 || first.Rows[0][0] != EventAgentStart {
		t.Fatalf("first record %v, %v", first, err)
	}
}

func TestBrokerForTrail(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"tcp://127.0.0.1:1883", "tcp://127.0.0.1:1883"},
		{"tls://pi:s3cret@node.lan:8883", "tls://node.lan:8883"},
		{"mqtt://user@node.lan", "mqtt://node.lan"},
		{"tcp://[::1", "(unparsable broker URL)"},
	} {
		if got := brokerForTrail(tc.in); got != tc.want {
			t.Errorf("brokerForTrail(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
