package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// TestBrokerRefusedSaysWhatToSet: a serve or edge whose broker refuses its
// CONNECT (no user name where the broker wants one) exits 1, and after the
// broker's words ("not Authorized") names the keys that carry the
// credentials in its own file. Before, the error alone left a new user of
// a broker with users (an external mosquitto, a node's embedded broker)
// guessing which file and which keys.
func TestBrokerRefusedSaysWhatToSet(t *testing.T) {
	dir := t.TempDir()
	p, err := scripted.Parse([]byte(`{"name":"idle","turns":[{"content":"ok"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	node, err := orchestrator.Start(ctx, orchestrator.Config{DataDir: filepath.Join(dir, "broker-node"),
		Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"}, HTTP: orchestrator.HTTPConf{Listen: "off"}}, orchestrator.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	tests := []struct {
		command, file, conf string
		want                []string
	}{
		{"serve", "evoclaw.toml", "[broker]\nurl = \"" + node.BrokerURL() + "\"\n[http]\nlisten = \"off\"\n",
			[]string{"[broker] username and password_env", "evoclaw.toml"}},
		{"edge", "agent.toml", "agent_id = \"pi-nocreds\"\n[mqtt]\nbroker = \"" + node.BrokerURL() + "\"\n",
			[]string{"[mqtt] username and password_env", "agent.toml", "evoclaw agents add NAME"}},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), tt.file)
			writeTestFile(t, conf, tt.conf)
			code, _, errOut := runBinary(t, "", tt.command, "--config", conf, "--data-dir", filepath.Join(t.TempDir(), "data"))
			if code != 1 || !strings.Contains(errOut, "refused the connection") {
				t.Fatalf("exit %d, want 1 and the broker's refusal:\n%s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}
