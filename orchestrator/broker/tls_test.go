package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// Timeouts of tlsConnect: a refusal or a success takes one attempt; a
// certificate that does not verify is retried (the broker may get fixed)
// until the context ends.
const (
	oneAttempt   = 20 * time.Second
	untilRetried = time.Second
)

func tlsConnect(t *testing.T, url string, files mqttc.TLSFiles, clientID, user, pw string, log *testenv.Buffer, timeout time.Duration) (*mqttc.Client, error) {
	t.Helper()
	conf, err := files.Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o := mqttc.Options{BrokerURL: url, ClientID: clientID, Username: user, Password: pw, TLSConfig: conf, MaxReconnectInterval: 100 * time.Millisecond}
	if log != nil {
		o.Logger = log.Logger(slog.LevelDebug)
	}
	c, err := mqttc.Connect(ctx, o)
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

func TestTLSListener(t *testing.T) {
	t.Parallel()
	pki := mqtttest.NewPKI(t, "fleet")
	other := mqtttest.NewPKI(t, "stranger")
	cert, key := pki.Issue(t, "broker", true)
	// carol-cam is in the users file; the fleet's identities and the
	// node's own (node:n1) live in memory.
	users := filepath.Join(t.TempDir(), broker.UsersFileName)
	if _, err := broker.AddUser(users, "carol-cam", broker.RoleAgent, 4, false); err != nil {
		t.Fatal(err)
	}
	b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: users,
		Users: append([]broker.User{{Name: "node:n1", Role: broker.RoleOrchestrator, Password: "node-pw"}}, fleet...),
		TLS:   broker.TLSOptions{Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key, ClientCAFile: pki.CAFile}})
	if !strings.HasPrefix(b.TLSURL(), "tls://127.0.0.1:") {
		t.Fatalf("TLSURL() = %q", b.TLSURL())
	}
	carolCert, carolKey := pki.Issue(t, "carol-cam", false)
	alexCert, alexKey := pki.Issue(t, "alex-eye", false)
	nodeCert, nodeKey := pki.Issue(t, "node:n1", false)
	malloryCert, malloryKey := pki.Issue(t, "mallory", false)
	strangerCert, strangerKey := other.Issue(t, "alex-eye", false)
	ca := mqttc.TLSFiles{CAFile: pki.CAFile}

	t.Run("password over verified TLS", func(t *testing.T) {
		c, err := tlsConnect(t, b.TLSURL(), ca, "evoclaw-alex-eye", "alex-eye", "alex-pw", nil, oneAttempt)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Subscribe(wire.CommandsTopic("alex-eye"), 1, func(mqttc.Message) {}); err != nil {
			t.Fatalf("own commands: %v", err)
		}
		if err := c.Subscribe("#", 1, func(mqttc.Message) {}); !errors.Is(err, mqttc.ErrSubscriptionRefused) {
			t.Fatalf("subscribe # over TLS = %v, want ErrSubscriptionRefused", err)
		}
	})
	t.Run("client certificate is the identity", func(t *testing.T) {
		files := mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: carolCert, KeyFile: carolKey}
		c, err := tlsConnect(t, b.TLSURL(), files, "evoclaw-carol-cam", "", "", nil, oneAttempt)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Subscribe(wire.CommandsTopic("carol-cam"), 1, func(mqttc.Message) {}); err != nil {
			t.Fatalf("own commands: %v", err)
		}
		if err := c.Subscribe(wire.CommandsTopic("bob"), 1, func(mqttc.Message) {}); !errors.Is(err, mqttc.ErrSubscriptionRefused) {
			t.Fatalf("certificate carol-cam subscribing to bob's commands = %v, want refused", err)
		}
	})
	t.Run("the node's in-memory identity still logs in by password", func(t *testing.T) {
		if _, err := tlsConnect(t, b.TLSURL(), ca, "evoclaw-orchestrator-n1", "node:n1", "node-pw", nil, oneAttempt); err != nil {
			t.Fatal(err)
		}
	})

	refused := []struct {
		name               string
		files              mqttc.TLSFiles
		clientID, user, pw string
		want               string // in the error; "refused" means ErrRefused
	}{
		{"system roots do not know the fleet CA", mqttc.TLSFiles{}, "evoclaw-alex-eye", "alex-eye", "alex-pw", "certificate"},
		{"another CA", mqttc.TLSFiles{CAFile: other.CAFile}, "evoclaw-alex-eye", "alex-eye", "alex-pw", "certificate"},
		{"certificate of an unknown identity", mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: malloryCert, KeyFile: malloryKey}, "evoclaw-mallory", "", "", "refused"},
		{"certificate and another name", mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: carolCert, KeyFile: carolKey}, "evoclaw-bob", "bob", "bob-pw", "refused"},
		// In-memory identities are in no users file, so `agents remove`
		// could never revoke such a certificate: the node's own identity
		// would be anyone's who got one signed.
		{"certificate naming the node's in-memory identity", mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: nodeCert, KeyFile: nodeKey}, "evoclaw-orchestrator-n1", "", "", "refused"},
		{"certificate naming an in-memory agent", mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: alexCert, KeyFile: alexKey}, "evoclaw-alex-eye", "", "", "refused"},
		// The client offers no certificate the broker asked for (Go picks one
		// signed by an acceptable CA), so it connects as anonymous: refused.
		{"certificate from another CA", mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: strangerCert, KeyFile: strangerKey}, "evoclaw-alex-eye", "", "", "refused"},
		{"wrong password over TLS", ca, "evoclaw-alex-eye", "alex-eye", "nope", "refused"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			timeout := oneAttempt
			if tt.want != "refused" {
				timeout = untilRetried
			}
			_, err := tlsConnect(t, b.TLSURL(), tt.files, tt.clientID, tt.user, tt.pw, nil, timeout)
			switch {
			case err == nil:
				t.Fatal("connected, want a refusal")
			case tt.want == "refused" && !errors.Is(err, mqttc.ErrRefused):
				t.Fatalf("err = %v, want ErrRefused", err)
			case tt.want != "refused" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}

	t.Run("insecure_skip_verify connects and warns", func(t *testing.T) {
		var logs testenv.Buffer
		if _, err := tlsConnect(t, b.TLSURL(), mqttc.TLSFiles{InsecureSkipVerify: true}, "evoclaw-alex-eye", "alex-eye", "alex-pw", &logs, oneAttempt); err != nil {
			t.Fatal(err)
		}
		wantLog(t, &logs, "level=WARN", "verification of the mqtt broker is OFF")
	})
}

func TestTLSRequireClientCert(t *testing.T) {
	t.Parallel()
	pki := mqtttest.NewPKI(t, "fleet")
	cert, key := pki.Issue(t, "broker", true)
	users := filepath.Join(t.TempDir(), broker.UsersFileName)
	carolPW, err := broker.AddUser(users, "carol-cam", broker.RoleAgent, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: users,
		TLS: broker.TLSOptions{Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key, ClientCAFile: pki.CAFile, RequireClientCert: true}})
	if _, err := tlsConnect(t, b.TLSURL(), mqttc.TLSFiles{CAFile: pki.CAFile}, "evoclaw-carol-cam", "carol-cam", carolPW, nil, untilRetried); err == nil {
		t.Fatal("password without a client certificate accepted, want the handshake refused")
	}
	carolCert, carolKey := pki.Issue(t, "carol-cam", false)
	if _, err := tlsConnect(t, b.TLSURL(), mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: carolCert, KeyFile: carolKey}, "evoclaw-carol-cam", "", "", nil, oneAttempt); err != nil {
		t.Fatal(err)
	}
}

// TestTLSCertificateReload replaces the server's certificate files; new
// connections get the new certificate without a restart.
func TestTLSCertificateReload(t *testing.T) {
	t.Parallel()
	pki := mqtttest.NewPKI(t, "fleet")
	cert, key := pki.Issue(t, "broker", true)
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, ReloadInterval: 20 * time.Millisecond,
		TLS: broker.TLSOptions{Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key}})
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(pki.CAFile)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatal("read CA", err)
	}
	serial := func() string {
		c, err := tls.Dial("tcp", b.TLSAddr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	newCert, newKey := pki.Issue(t, "broker", true)
	for _, f := range [][2]string{{newKey, key}, {newCert, cert}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1]+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f[1]+".new", f[1]); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return serial() != before }, "new connections get the new certificate")
}
