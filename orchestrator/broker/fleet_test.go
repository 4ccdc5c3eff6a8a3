package broker_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
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

// securedBroker is a broker running the fleet rules with the identities
// orchestrator, alex-eye and bob.
type securedBroker struct {
	addr, url string
	pw        map[string]string
}

// startSecured starts the embedded broker with a users file written by
// AddUser, or mosquitto with testdata/mosquitto's configuration and ACL and
// a password file written by mosquitto_passwd, with the same passwords.
func startSecured(t *testing.T, kind string) securedBroker {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, broker.UsersFileName)
	sb := securedBroker{pw: map[string]string{}}
	for _, u := range []struct {
		name string
		role broker.Role
	}{{"orchestrator", broker.RoleOrchestrator}, {"alex-eye", broker.RoleAgent}, {"bob", broker.RoleAgent}} {
		pw, err := broker.AddUser(users, u.name, u.role, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		sb.pw[u.name] = pw
	}
	switch kind {
	case "embedded":
		b := start(t, broker.Options{Listen: "127.0.0.1:0", UsersFile: users})
		sb.addr, sb.url = b.Addr(), b.URL()
	case "mosquitto":
		passwd := filepath.Join(dir, "evoclaw.passwd")
		for name, pw := range sb.pw {
			mqtttest.MosquittoPasswd(t, passwd, name, pw)
		}
		example, acl := mosquittoExample(t)
		sb.url, _ = mqtttest.StartMosquittoConf(t, func(port int) string {
			conf := rewriteConf(t, example, map[string]string{
				"listener": fmt.Sprintf("%d 127.0.0.1", port), "password_file": passwd, "acl_file": acl, "persistence_location": dir + "/",
			})
			if os.Geteuid() == 0 {
				// Started as root, mosquitto switches to the user
				// "mosquitto", who cannot read the test's private files.
				conf += "user root\n"
			}
			return conf
		})
		sb.addr = strings.TrimPrefix(sb.url, "tcp://")
	}
	return sb
}

// mosquittoExample returns the shipped example mosquitto.conf and the
// absolute path of the ACL file next to it.
func mosquittoExample(t *testing.T) (conf, aclFile string) {
	t.Helper()
	example, err := os.ReadFile("../../testdata/mosquitto/mosquitto.conf")
	if err != nil {
		t.Fatal(err)
	}
	aclFile, err = filepath.Abs("../../testdata/mosquitto/evoclaw.acl")
	if err != nil {
		t.Fatal(err)
	}
	return string(example), aclFile
}

// rewriteConf replaces the value of each active directive named in set,
// and fails if one is missing: the example must keep these directives.
func rewriteConf(t *testing.T, conf string, set map[string]string) string {
	t.Helper()
	var out strings.Builder
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(conf))
	for sc.Scan() {
		line := sc.Text()
		key, _, _ := strings.Cut(line, " ")
		if v, ok := set[key]; ok && !seen[key] {
			line, seen[key] = key+" "+v, true
		}
		out.WriteString(line + "\n")
	}
	for k := range set {
		if !seen[k] {
			t.Fatalf("testdata/mosquitto/mosquitto.conf has no %q directive", k)
		}
	}
	return out.String()
}

func (sb securedBroker) raw(t *testing.T, name, password string, will string) (net.Conn, byte) {
	t.Helper()
	c := mqtttest.RawConnect{ClientID: "evoclaw-" + name, Username: name, Password: password}
	if will != "" {
		c.WillTopic, c.WillPayload = will, `{"forged":"will"}`
	}
	return mqtttest.DialRaw(t, sb.addr, c)
}

func (sb securedBroker) client(t *testing.T, name, clientID string) *mqttc.Client {
	t.Helper()
	return mqtttest.Connect(t, mqttc.Options{BrokerURL: sb.url, ClientID: clientID, Username: name, Password: sb.pw[name]})
}

// TestFleetRulesOnEveryBroker runs the same refusals against the embedded
// broker and against mosquitto configured by the shipped example, with an
// orchestrator-side client and agents. Where the brokers differ in how they
// refuse (mochi ends the connection of a client that publishes outside its
// topics, mosquitto drops the message), the test checks what matters: the
// message is never delivered.
func TestFleetRulesOnEveryBroker(t *testing.T) {
	for _, kind := range []string{"embedded", "mosquitto"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			sb := startSecured(t, kind)
			seen := &mqtttest.Inbox{}
			orch := sb.client(t, "orchestrator", "evoclaw-orchestrator-test")
			if err := orch.Subscribe(wire.TopicPrefix+"#", 1, seen.Handle); err != nil {
				t.Fatal(err)
			}

			t.Run("legitimate round trip", func(t *testing.T) {
				alex := sb.client(t, "alex-eye", "evoclaw-alex-eye")
				got := make(chan string, 4)
				if err := alex.Subscribe(wire.CommandsTopic("alex-eye"), 1, func(m mqttc.Message) { got <- string(m.Payload) }); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := orch.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic("alex-eye"), Payload: []byte(`{"command":"ping","request_id":"r1"}`), QoS: 1}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-got:
				case <-ctx.Done():
					t.Fatal("agent did not receive the orchestrator's command")
				}
				if err := alex.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic("alex-eye"), Payload: []byte(`{"pong":1}`), QoS: 1}); err != nil {
					t.Fatal(err)
				}
				testenv.Eventually(t, 5*time.Second, func() bool { return seen.Has(wire.ReportsTopic("alex-eye"), `{"pong":1}`) }, "orchestrator receives the report")
			})

			t.Run("connect refusals", func(t *testing.T) {
				for _, tt := range []struct{ name, user, pw string }{
					{"wrong password", "alex-eye", "guess"},
					{"another agent's name", "bob", sb.pw["alex-eye"]},
					{"anonymous", "", ""},
					{"unknown user", "mallory", "x"},
				} {
					if _, rc := sb.raw(t, tt.user, tt.pw, ""); rc != 4 && rc != 5 {
						t.Errorf("%s: CONNACK %d, want 4 or 5 (refused)", tt.name, rc)
					}
				}
			})

			// mochi answers a refused SUBSCRIBE with 0x80; mosquitto 2.0
			// grants it to a 3.1.1 client and then delivers nothing on it.
			// Either way, no message outside the agent's own commands may
			// reach it.
			t.Run("subscription refusals", func(t *testing.T) {
				alex, rc := sb.raw(t, "alex-eye", sb.pw["alex-eye"], "")
				if rc != 0 {
					t.Fatalf("CONNACK %d", rc)
				}
				for _, filter := range []string{"#", wire.CommandsTopic("bob"), wire.AllAgents(wire.KindCommands), wire.AllAgents(wire.KindReports)} {
					if code := mqtttest.RawSubscribe(t, alex, filter); code != 0x80 && kind == "embedded" {
						t.Errorf("SUBSCRIBE %s: SUBACK %#x, want 0x80", filter, code)
					}
				}
				if code := mqtttest.RawSubscribe(t, alex, wire.CommandsTopic("alex-eye")); code != 1 {
					t.Fatalf("SUBSCRIBE to its own commands: SUBACK %#x, want 1", code)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				for _, m := range []mqttc.Message{
					{Topic: wire.CommandsTopic("bob"), Payload: []byte(`{"for":"bob"}`), QoS: 1},
					{Topic: wire.CommandsTopic("alex-eye"), Payload: []byte(`{"for":"alex"}`), QoS: 1},
				} {
					if err := orch.Publish(ctx, m); err != nil {
						t.Fatal(err)
					}
				}
				bob, _ := sb.raw(t, "bob", sb.pw["bob"], "")
				mqtttest.RawPublish(t, bob, wire.ReportsTopic("bob"), `{"report":"of bob"}`, false)
				testenv.Eventually(t, 5*time.Second, func() bool { return seen.Has(wire.ReportsTopic("bob"), `{"report":"of bob"}`) }, "bob's report")
				// What alex receives must be its own commands only: the one
				// sent before bob's report, then one sent after it.
				if err := orch.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic("alex-eye"), Payload: []byte(`{"for":"alex","n":2}`), QoS: 1}); err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{`{"for":"alex"}`, `{"for":"alex","n":2}`} {
					if topic, payload := mqtttest.RawNextPublish(t, alex, 5*time.Second); topic != wire.CommandsTopic("alex-eye") || payload != want {
						t.Fatalf("alex-eye received %s %s, want only its own commands", topic, payload)
					}
				}
			})

			t.Run("forged publishes are not delivered", func(t *testing.T) {
				for i, topic := range []string{wire.ReportsTopic("bob"), wire.StatusTopic("bob"), wire.CommandsTopic("bob"), wire.CapabilitiesTopic("orchestrator-x")} {
					alex, rc := sb.raw(t, "alex-eye", sb.pw["alex-eye"], "")
					if rc != 0 {
						t.Fatalf("CONNACK %d", rc)
					}
					forged := fmt.Sprintf(`{"forged":%d}`, i)
					marker := fmt.Sprintf(`{"marker":%d}`, i)
					mqtttest.RawPublish(t, alex, topic, forged, false)
					mqtttest.RawPublish(t, alex, wire.ReportsTopic("alex-eye"), marker, false) // same connection: ordered after
					testenv.Eventually(t, 5*time.Second, func() bool {
						return seen.Has(wire.ReportsTopic("alex-eye"), marker) || mqtttest.RawClosed(alex, 10*time.Millisecond)
					}, "the marker after the forged message arrives, or the broker closes the connection")
					if seen.Has(topic, forged) {
						t.Fatalf("forged message on %s delivered", topic)
					}
				}
			})

			t.Run("forged will is not delivered", func(t *testing.T) {
				alex, rc := sb.raw(t, "alex-eye", sb.pw["alex-eye"], wire.StatusTopic("bob"))
				if rc == 0 {
					alex.Close() // without DISCONNECT: the broker would publish the will
				}
				bob, rc := sb.raw(t, "bob", sb.pw["bob"], "")
				if rc != 0 {
					t.Fatalf("CONNACK %d", rc)
				}
				mqtttest.RawPublish(t, bob, wire.ReportsTopic("bob"), `{"after":"will"}`, false)
				testenv.Eventually(t, 5*time.Second, func() bool { return seen.Has(wire.ReportsTopic("bob"), `{"after":"will"}`) }, "bob's report")
				if seen.Has(wire.StatusTopic("bob"), `{"forged":"will"}`) {
					t.Fatal("a will on another agent's status topic was delivered")
				}
			})

			t.Run("orchestrator cannot forge reports", func(t *testing.T) {
				c, rc := mqtttest.DialRaw(t, sb.addr, mqtttest.RawConnect{ClientID: "ops-raw", Username: "orchestrator", Password: sb.pw["orchestrator"]})
				if rc != 0 {
					t.Fatalf("CONNACK %d", rc)
				}
				mqtttest.RawPublish(t, c, wire.ReportsTopic("bob"), `{"forged":"by orchestrator"}`, false)
				bob, _ := sb.raw(t, "bob", sb.pw["bob"], "")
				mqtttest.RawPublish(t, bob, wire.ReportsTopic("bob"), `{"after":"orchestrator"}`, false)
				testenv.Eventually(t, 5*time.Second, func() bool { return seen.Has(wire.ReportsTopic("bob"), `{"after":"orchestrator"}`) }, "bob's report")
				if seen.Has(wire.ReportsTopic("bob"), `{"forged":"by orchestrator"}`) {
					t.Fatal("report forged by the orchestrator delivered")
				}
			})
		})
	}
}

// TestMosquittoExampleTLS enables the commented TLS block of the example
// configuration: an agent authenticated by its client certificate (the
// common name becomes its username, %u in the ACL) gets its own commands
// and nothing else; a TLS client without a certificate gets nothing.
func TestMosquittoExampleTLS(t *testing.T) {
	t.Parallel()
	sb := securedBroker{pw: map[string]string{}}
	dir := t.TempDir()
	passwd := filepath.Join(dir, "evoclaw.passwd")
	for _, name := range []string{"orchestrator", "bob"} {
		pw, err := broker.NewPassword()
		if err != nil {
			t.Fatal(err)
		}
		sb.pw[name] = pw
		mqtttest.MosquittoPasswd(t, passwd, name, pw)
	}
	pki := mqtttest.NewPKI(t, "fleet")
	cert, key := pki.Issue(t, "broker", true)
	alexCert, alexKey := pki.Issue(t, "alex-eye", false)
	example, acl := mosquittoExample(t)
	var tlsPort int
	sb.url, _ = mqtttest.StartMosquittoConf(t, func(port int) string {
		tlsPort = testenv.FreePort(t)
		conf := uncomment(example, "listener", "certfile", "keyfile", "cafile", "require_certificate", "use_identity_as_username")
		conf = rewriteConf(t, conf, map[string]string{
			"listener": fmt.Sprintf("%d 127.0.0.1", port), "password_file": passwd, "acl_file": acl, "persistence_location": dir + "/",
		})
		// The second listener line is the TLS one.
		conf = strings.Replace(conf, "listener 8883", fmt.Sprintf("listener %d 127.0.0.1", tlsPort), 1)
		conf = rewriteConf(t, conf, map[string]string{"certfile": cert, "keyfile": key, "cafile": pki.CAFile})
		if os.Geteuid() == 0 {
			conf += "user root\n" // see startSecured
		}
		return conf
	})
	sb.addr = strings.TrimPrefix(sb.url, "tcp://")
	tlsURL := fmt.Sprintf("tls://127.0.0.1:%d", tlsPort)

	orch := sb.client(t, "orchestrator", "evoclaw-orchestrator-test")
	alex, err := tlsConnect(t, tlsURL, mqttc.TLSFiles{CAFile: pki.CAFile, CertFile: alexCert, KeyFile: alexKey}, "evoclaw-alex-eye", "", "", nil, oneAttempt)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 8)
	for _, filter := range []string{wire.CommandsTopic("alex-eye"), wire.CommandsTopic("bob")} {
		// mosquitto grants the second and delivers nothing on it.
		if err := alex.Subscribe(filter, 1, func(m mqttc.Message) { got <- m.Topic + " " + string(m.Payload) }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range []string{"bob", "alex-eye"} {
		if err := orch.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic(id), Payload: []byte(`{"for":"` + id + `"}`), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case m := <-got:
		if m != wire.CommandsTopic("alex-eye")+` {"for":"alex-eye"}` {
			t.Fatalf("certificate alex-eye received %s first, want only its own command", m)
		}
	case <-ctx.Done():
		t.Fatal("certificate alex-eye did not receive its command")
	}
	if _, err := tlsConnect(t, tlsURL, mqttc.TLSFiles{CAFile: pki.CAFile}, "evoclaw-bob", "bob", sb.pw["bob"], nil, untilRetried); err == nil {
		t.Fatal("TLS client without a certificate accepted; require_certificate is on")
	}
}

// uncomment activates the commented-out directives named in keys.
func uncomment(conf string, keys ...string) string {
	var out strings.Builder
	for _, line := range strings.SplitAfter(conf, "\n") {
		for _, k := range keys {
			if strings.HasPrefix(line, "#"+k+" ") {
				line = line[1:]
				break
			}
		}
		out.WriteString(line)
	}
	return out.String()
}
