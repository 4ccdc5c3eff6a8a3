package edge

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestAgentOverTLSWithClientCertificate runs an agent whose identity is
// its certificate (CN = agent id), verified against a private CA, on a
// broker that allows no anonymous client and knows no password for it.
func TestAgentOverTLSWithClientCertificate(t *testing.T) {
	t.Parallel()
	pki := mqtttest.NewPKI(t, "fleet")
	cert, key := pki.Issue(t, "broker", true)
	agentCert, agentKey := pki.Issue(t, "pi-tls", false)
	// Known identity, unused password: the certificate authenticates. It
	// must be in the users file: a certificate never names an in-memory
	// identity.
	users := filepath.Join(t.TempDir(), broker.UsersFileName)
	if _, err := broker.AddUser(users, "pi-tls", broker.RoleAgent, 4, false); err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", UsersFile: users,
		TLS: broker.TLSOptions{Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key, ClientCAFile: pki.CAFile, RequireClientCert: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	dir := t.TempDir()
	// Relative paths in [mqtt] are resolved against the file's directory.
	for src, dst := range map[string]string{pki.CAFile: "ca.pem", agentCert: "agent.pem", agentKey: "agent.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	body := "agent_id = \"pi-tls\"\ndata_dir = \"data\"\n[mqtt]\nbroker = \"" + b.TLSURL() + "\"\nca_file = \"ca.pem\"\ncert_file = \"agent.pem\"\nkey_file = \"agent.key\"\n"
	cfg, _ := loadConfig(t, dir, body, "")
	if cfg.MQTT.CAFile != filepath.Join(dir, "ca.pem") {
		t.Fatalf("ca_file resolved to %q", cfg.MQTT.CAFile)
	}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 20*time.Second) // over TLS
}
