package orchestrator

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

func TestBrokerSecurityConfig(t *testing.T) {
	tests := []struct {
		name, toml, want string // want: substring of the error; "" = valid
	}{
		{"embedded with files", "[broker]\nusers_file = \"users\"\ntls_listen = \"127.0.0.1:0\"\ntls_cert_file = \"c.pem\"\ntls_key_file = \"k.pem\"\nmax_packet_bytes = 4096\n", ""},
		{"embedded settings with an external broker", "[broker]\nurl = \"tls://b:8883\"\nallow_anonymous = true\n", "configure the embedded broker"},
		{"client tls files with the embedded broker", "[broker]\nca_file = \"ca.pem\"\n", "for an external tls:// broker"},
		{"credentials with the embedded broker", "[broker]\nusername = \"me\"\n", "for an external broker"},
		{"external broker with client tls", "[broker]\nurl = \"tls://b:8883\"\nca_file = \"ca.pem\"\ninsecure_skip_verify = true\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c, ok := loadConfig(t, dir, tt.toml, tt.want)
			if !ok {
				return
			}
			for _, p := range []string{c.Broker.UsersFile, c.Broker.TLSCertFile, c.Broker.TLSKeyFile, c.Broker.CAFile} {
				if p != "" && filepath.Dir(p) != dir {
					t.Errorf("path %q not resolved against the config's directory %s", p, dir)
				}
			}
		})
	}
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(DefaultDataDir, broker.UsersFileName); c.UsersFilePath() != want {
		t.Fatalf("UsersFilePath() = %q, want %q", c.UsersFilePath(), want)
	}
}

// TestNodeSurvivesAHostileAgent: an authenticated agent sends garbage,
// reports for another agent, an unknown report type and an oversized
// packet. The node logs and drops each and keeps serving a good agent,
// which joins with the credentials `evoclaw agents add` would make.
func TestNodeSurvivesAHostileAgent(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{MaxPacketBytes: 64 << 10}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	badPW := addAgentUser(t, cfg, "pi-bad")
	goodPW := addAgentUser(t, cfg, "bench-edge")
	var logs testenv.Buffer
	node := startNode(t, cfg, Options{Logger: logs.Logger(slog.LevelInfo)})
	addr := strings.TrimPrefix(node.BrokerURL(), "tcp://")

	if _, rc := mqtttest.DialRaw(t, addr, mqtttest.RawConnect{ClientID: "evoclaw-pi-bad"}); rc == 0 {
		t.Fatal("anonymous client accepted by a node without allow_anonymous")
	}
	bad, rc := mqtttest.DialRaw(t, addr, mqtttest.RawConnect{ClientID: "evoclaw-pi-bad", Username: "pi-bad", Password: badPW})
	if rc != 0 {
		t.Fatalf("CONNACK %d", rc)
	}
	for _, payload := range []string{
		"\x00garbage",
		`{"agent_id":"bench-edge","report_type":"result","payload":{"request_id":"x"}}`,
		`{"agent_id":"pi-bad","report_type":"gossip","payload":{}}`,
	} {
		mqtttest.RawPublish(t, bad, wire.ReportsTopic("pi-bad"), payload, false)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Count(logs.String(), "dropping malformed message") >= 3 },
		"three malformed reports logged and dropped")
	mqtttest.RawPublish(t, bad, wire.ReportsTopic("pi-bad"), strings.Repeat("x", 128<<10), false)
	if !mqtttest.RawClosed(bad, 5*time.Second) {
		t.Fatal("oversized report did not end the sender's connection")
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "packet over the size limit") }, "oversized packet logged")

	startAgent(t, node, dir, testAgent{Username: "bench-edge", Password: goodPW, Wait: 15 * time.Second})
}
