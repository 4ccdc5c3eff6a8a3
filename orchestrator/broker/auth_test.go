package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

var testUsers = []broker.User{
	{Name: "orchestrator", Role: broker.RoleOrchestrator, Password: "s3cret"},
	{Name: "alex-eye", Role: broker.RoleAgent, Password: "pi-pass"},
}

func TestUsersAuthenticate(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: testUsers})
	tests := []struct {
		name     string
		user, pw string
		ok       bool
	}{
		{"right password", "orchestrator", "s3cret", true},
		{"agent", "alex-eye", "pi-pass", true},
		{"wrong password", "orchestrator", "S3cret", false},
		{"another user's password", "alex-eye", "s3cret", false},
		{"password prefix", "orchestrator", "s3cre", false},
		{"unknown user", "mallory", "s3cret", false},
		{"user without password", "orchestrator", "", false},
		{"anonymous", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Refusals must fail at once, not after retrying until ctx ends.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			began := time.Now()
			id := "auth-" + tt.name
			if tt.user == "alex-eye" {
				id = "evoclaw-alex-eye" // agents must use their own client id
			}
			c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: b.URL(), ClientID: id, Username: tt.user, Password: tt.pw})
			if tt.ok {
				if err != nil {
					t.Fatalf("Connect as %q: %v", tt.user, err)
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatalf("Connect as %q with password %q succeeded, want refusal", tt.user, tt.pw)
			}
			if !errors.Is(err, mqttc.ErrRefused) {
				t.Fatalf("Connect as %q = %v, want ErrRefused", tt.user, err)
			}
			if d := time.Since(began); d > 5*time.Second {
				t.Fatalf("refusal took %v; it should not be retried", d)
			}
		})
	}
}

func TestUsersRawConnackCodes(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: testUsers})
	tests := []struct {
		name string
		c    mqtttest.RawConnect
		rc   byte
	}{
		{"accepted", mqtttest.RawConnect{ClientID: "raw-ok", Username: "orchestrator", Password: "s3cret"}, 0},
		// mochi maps its v5 "bad user name or password" to 3.1.1's 5, "not
		// authorized", rather than 4; clients must treat both as refusals.
		{"bad password", mqtttest.RawConnect{ClientID: "raw-bad", Username: "orchestrator", Password: "nope"}, 5},
		{"anonymous", mqtttest.RawConnect{ClientID: "raw-anon"}, 5},
		{"agent", mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "pi-pass"}, 0},
		{"agent with another client id", mqtttest.RawConnect{ClientID: "evoclaw-orchestrator", Username: "alex-eye", Password: "pi-pass"}, 5},
		{"agent will on its own status", mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "pi-pass",
			WillTopic: wire.StatusTopic("alex-eye"), WillPayload: "{}"}, 0},
		{"agent will on another agent's status", mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "pi-pass",
			WillTopic: wire.StatusTopic("bob"), WillPayload: `{"agent_id":"bob","status":"offline"}`}, 5},
		{"agent will on a commands topic", mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "pi-pass",
			WillTopic: wire.CommandsTopic("bob"), WillPayload: `{"command":"shutdown","request_id":"x"}`}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, rc := mqtttest.DialRaw(t, b.Addr(), tt.c); rc != tt.rc {
				t.Fatalf("CONNACK return code %d, want %d", rc, tt.rc)
			}
		})
	}
}

// TestRetainedWillWithUsers checks, with authentication on, the presence
// scheme the system relies on: a retained "online" status, replaced by the
// retained "offline" last will when the agent's TCP connection just ends.
func TestRetainedWillWithUsers(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: testUsers})
	topic := wire.StatusTopic("alex-eye")
	offline, _ := json.Marshal(wire.Status{AgentID: "alex-eye", Status: wire.PresenceOffline})

	agent, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{
		ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "pi-pass",
		WillTopic: topic, WillPayload: string(offline), WillRetain: true,
	})
	if rc != 0 {
		t.Fatalf("agent CONNECT return code %d", rc)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	online, _ := json.Marshal(wire.Status{AgentID: "alex-eye", Status: wire.PresenceOnline})
	mqtttest.RawPublish(t, agent, topic, string(online), true)

	watch := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "watch", Username: "orchestrator", Password: "s3cret"})
	statuses := make(chan string, 16)
	if err := watch.Subscribe(topic, 1, func(m mqttc.Message) { statuses <- string(m.Payload) }); err != nil {
		t.Fatal(err)
	}

	agent.Close() // no DISCONNECT: the broker must publish the will

	for s := ""; s != string(offline); {
		select {
		case s = <-statuses: // the retained "online" first, then the will
		case <-ctx.Done():
			t.Fatal("will not published after the agent's connection closed")
		}
	}
	late := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "late", Username: "orchestrator", Password: "s3cret"})
	retained := make(chan mqttc.Message, 16)
	if err := late.Subscribe(wire.AllAgents(wire.KindStatus), 1, func(m mqttc.Message) { retained <- m }); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-retained:
		s, err := wire.DecodeStatus("alex-eye", m.Payload)
		if err != nil {
			t.Fatalf("retained status: %v", err)
		}
		if !m.Retained || s.Status != wire.PresenceOffline {
			t.Fatalf("late subscriber got status %q (retained %v), want the retained offline will", s.Status, m.Retained)
		}
	case <-ctx.Done():
		t.Fatal("no retained status for a late subscriber")
	}
}

// TestTakenOverSessionSendsNoWill: when an agent's new connection takes its
// client id over, the old connection's will ("offline") is not published,
// since the agent is connected; it used to be, from the old connection's
// goroutine, and could land after the new "online" and stay retained. The
// will of the connection that holds the id still works.
func TestTakenOverSessionSendsNoWill(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: testUsers})
	topic := wire.StatusTopic("alex-eye")
	offline, _ := json.Marshal(wire.Status{AgentID: "alex-eye", Status: wire.PresenceOffline})
	online, _ := json.Marshal(wire.Status{AgentID: "alex-eye", Status: wire.PresenceOnline})
	agent := mqtttest.RawConnect{
		ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "pi-pass",
		WillTopic: topic, WillPayload: string(offline), WillRetain: true,
	}

	watch := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "watch", Username: "orchestrator", Password: "s3cret"})
	statuses := make(chan string, 16)
	if err := watch.Subscribe(topic, 1, func(m mqttc.Message) { statuses <- string(m.Payload) }); err != nil {
		t.Fatal(err)
	}
	next := func(what string) string {
		select {
		case s := <-statuses:
			return s
		case <-time.After(10 * time.Second):
			t.Fatalf("no status: %s", what)
			return ""
		}
	}

	first, rc := mqtttest.DialRaw(t, b.Addr(), agent)
	if rc != 0 {
		t.Fatalf("first CONNECT return code %d", rc)
	}
	second, rc := mqtttest.DialRaw(t, b.Addr(), agent)
	if rc != 0 {
		t.Fatalf("second CONNECT return code %d", rc)
	}
	if !mqtttest.RawClosed(first, 5*time.Second) {
		t.Fatal("the taken-over connection was kept")
	}
	mqtttest.RawPublish(t, second, topic, string(online), true)
	if s := next("the agent's online"); s != string(online) {
		t.Fatalf("first status after the takeover = %s, want %s (the old connection's will)", s, online)
	}
	// The old will, had it been sent late. (The retained "online" may
	// come again: mochi sends a new subscription's retained messages
	// after its SUBACK, so one made as the status is retained gets both.)
	for late := time.After(300 * time.Millisecond); ; {
		select {
		case s := <-statuses:
			if s != string(online) {
				t.Fatalf("status after online = %s", s)
			}
			continue
		case <-late:
		}
		break
	}

	second.Close() // no DISCONNECT: this connection's will is due
	if s := next("the will of the connection holding the id"); s != string(offline) {
		t.Fatalf("status after the agent's connection ended = %s, want %s", s, offline)
	}
}
