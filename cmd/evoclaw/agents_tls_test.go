package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// TestAgentsAddTLSBrokerNamesCAFile: for a tls:// broker, the lines agents
// add prints say how to trust a broker certificate made by the operator's
// own CA, with the key that does it; uncommented, they load as agent.toml
// (or the orchestrator's evoclaw.toml). Before, the lines had no word of
// it, and an agent given them verbatim retried for ever with "certificate
// signed by unknown authority". A tcp:// broker gets no such line.
func TestAgentsAddTLSBrokerNamesCAFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, role, broker string
		wantCA             bool
	}{
		{"pi1", "agent", "tls://hub.lan:8883", true},
		{"pi2", "agent", "ssl://hub.lan:8883", true},
		{"ops", "orchestrator", "tls://hub.lan:8883", true},
		{"pi3", "agent", "tcp://hub.lan:1883", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := runCLI(t, 0, "agents", "add", tt.name, "--data-dir", dir, "--role", tt.role, "--broker", tt.broker)
			if strings.Contains(out, "ca_file") != tt.wantCA {
				t.Fatalf("ca_file named: %v, want %v\n%s", !tt.wantCA, tt.wantCA, out)
			}
			if !tt.wantCA {
				return
			}
			ca := filepath.Join(dir, "broker-ca.pem")
			conf := strings.Replace(out, "# ca_file = \"/etc/evoclaw/broker-ca.pem\"", "ca_file = \""+ca+"\"", 1)
			conf = conf[strings.Index(conf, "\n# ")+1 : strings.Index(conf, agentPasswordEnv+"=")] // the TOML lines
			path := filepath.Join(dir, tt.name+".toml")
			writeFile(t, path, conf)
			t.Setenv(agentPasswordEnv, "x")
			var err error
			var got string
			if tt.role == "agent" {
				var c edge.Config
				c, err = edge.LoadConfig(path)
				got = c.MQTT.CAFile
			} else {
				var c orchestrator.Config
				c, err = orchestrator.LoadConfig(path)
				got = c.Broker.CAFile
			}
			if err != nil || got != ca {
				t.Fatalf("the printed lines with ca_file: %v, ca_file %q\n%s", err, got, conf)
			}
		})
	}
}
