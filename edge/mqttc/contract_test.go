package mqttc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// These tests are the contract between mqttc and a broker; each runs against
// the embedded broker and mosquitto.

func TestContractPublishSubscribeQoS1(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		got := subscribed(t, b.URL, wire.AllAgents(wire.KindReports))
		pub := connect(t, b.URL, nil)
		const n = 20
		for i := range n {
			publish(t, pub, mqttc.Message{Topic: wire.ReportsTopic("alex-eye"), Payload: fmt.Appendf(nil, "report %d", i), QoS: 1})
		}
		testenv.Eventually(t, waitFor, func() bool { return len(got.All()) >= n }, "all reports received")
		msgs := got.All()
		if len(msgs) != n {
			t.Fatalf("received %d messages, want %d", len(msgs), n)
		}
		for i, m := range msgs {
			want := mqttc.Message{Topic: wire.ReportsTopic("alex-eye"), Payload: fmt.Appendf(nil, "report %d", i), QoS: 1}
			if m.Topic != want.Topic || string(m.Payload) != string(want.Payload) || m.QoS != want.QoS || m.Retained {
				t.Fatalf("message %d = %+v (payload %q), want %+v in order, not retained", i, m, m.Payload, want)
			}
		}
	})
}

func TestContractRetainedForLateSubscriber(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		topic := wire.CapabilitiesTopic("alex-eye")
		caps, _ := json.Marshal(wire.Capabilities{AgentID: "alex-eye", Capabilities: "Pi sensor node"})
		pub := connect(t, b.URL, nil)
		publish(t, pub, mqttc.Message{Topic: topic, Payload: caps, QoS: 1, Retained: true})
		pub.Close()

		got := subscribed(t, b.URL, wire.AllAgents(wire.KindCapabilities))
		m := got.Await(t, string(caps))
		if !m.Retained || m.Topic != topic {
			t.Fatalf("late subscriber got %+v, want retained message on %s", m, topic)
		}
	})
}

// TestContractWillOnAbruptDeath kills a child process holding an agent's
// connection with SIGKILL, as a crash or power loss would end it, and checks
// that its retained "offline" will replaces its retained "online" status.
func TestContractWillOnAbruptDeath(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		agent := clientID("agent")
		got := subscribed(t, b.URL, wire.StatusTopic(agent))

		child := startAgentChild(t, b.URL, agent)
		got.Await(t, statusPayload(agent, wire.PresenceOnline))
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()

		got.Await(t, statusPayload(agent, wire.PresenceOffline))
		retained := subscribed(t, b.URL, wire.StatusTopic(agent))
		if m := retained.Await(t, statusPayload(agent, wire.PresenceOffline)); !m.Retained {
			t.Fatalf("will delivered to a late subscriber with Retained=false; it must be retained")
		}
	})
}

// TestContractNoWillOnClose checks that a clean Close does not trigger the
// will: the broker must discard it on DISCONNECT.
func TestContractNoWillOnClose(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		agent := clientID("agent")
		got := subscribed(t, b.URL, wire.StatusTopic(agent))
		c := connect(t, b.URL, func(o *mqttc.Options) { agentOptions(o, agent) })
		got.Await(t, statusPayload(agent, wire.PresenceOnline))
		c.Close()

		// Nothing to wait for but the absence of the will.
		time.Sleep(quietPeriod)
		offline := statusPayload(agent, wire.PresenceOffline)
		if _, ok := got.Find(func(m mqttc.Message) bool { return string(m.Payload) == offline }); ok {
			t.Fatal("will published after a clean Close")
		}
		retained := subscribed(t, b.URL, wire.StatusTopic(agent))
		if m := retained.Await(t, statusPayload(agent, wire.PresenceOnline)); !m.Retained {
			t.Fatal("retained status not marked retained")
		}
	})
}

// TestContractSubscriptionsSurviveRestart restarts the broker, empty, on the
// same port and checks that clients reconnect, restore their subscriptions
// before OnConnect runs, and receive what is published afterwards.
func TestContractSubscriptionsSurviveRestart(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		var subConnects, pubConnects atomic.Int32
		sub := connect(t, b.URL, func(o *mqttc.Options) { o.OnConnect = func(*mqttc.Client) { subConnects.Add(1) } })
		var got mqtttest.Inbox
		topic := wire.CommandsTopic("alex-eye")
		if err := sub.Subscribe(topic, 1, got.Handle); err != nil {
			t.Fatal(err)
		}
		pub := connect(t, b.URL, func(o *mqttc.Options) { o.OnConnect = func(*mqttc.Client) { pubConnects.Add(1) } })
		publish(t, pub, mqttc.Message{Topic: topic, Payload: []byte("before"), QoS: 1})
		got.Await(t, "before")

		b.Stop()
		testenv.Eventually(t, waitFor, func() bool { return !sub.Connected() && !pub.Connected() }, "clients notice the broker is gone")
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := pub.Publish(ctx, mqttc.Message{Topic: topic, Payload: []byte("lost"), QoS: 1}); !errors.Is(err, mqttc.ErrNotConnected) {
			t.Fatalf("Publish while the broker is down = %v, want ErrNotConnected", err)
		}

		b.Restart()
		testenv.Eventually(t, waitFor, func() bool { return subConnects.Load() >= 2 && pubConnects.Load() >= 2 },
			"both clients reconnect and finish OnConnect")
		publish(t, pub, mqttc.Message{Topic: topic, Payload: []byte("after"), QoS: 1})
		got.Await(t, "after")
		if slices.ContainsFunc(got.All(), func(m mqttc.Message) bool { return string(m.Payload) == "lost" }) {
			t.Fatal("message refused with ErrNotConnected was delivered anyway")
		}
	})
}

// Child process: the test binary re-executed as an edge agent that holds a
// connection with a last will until it is killed.

const (
	childURLEnv   = "MQTTC_TEST_CHILD_BROKER"
	childAgentEnv = "MQTTC_TEST_CHILD_AGENT"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(childURLEnv); url != "" {
		os.Exit(runAgentChild(url, os.Getenv(childAgentEnv)))
	}
	os.Exit(m.Run())
}

// runAgentChild connects as agent and stays connected until stdin closes.
func runAgentChild(url, agent string) int {
	o := mqttc.Options{BrokerURL: url}
	agentOptions(&o, agent)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, err := mqttc.Connect(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer c.Close()
	_, _ = os.Stdin.Read(make([]byte, 1)) // until the parent goes away
	return 0
}

// startAgentChild starts the child and kills it at cleanup if still running.
func startAgentChild(t *testing.T, url, agent string) *exec.Cmd {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "child.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childURLEnv+"="+url, childAgentEnv+"="+agent)
	cmd.Stdout, cmd.Stderr = logf, logf
	stdin, err := cmd.StdinPipe() // held open so the child stays up
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				t.Logf("child output:\n%s", b)
			}
		}
	})
	return cmd
}

// agentOptions sets up o the way an edge agent connects: a retained
// "offline" will and a retained "online" status published on every connect.
func agentOptions(o *mqttc.Options, agent string) {
	o.ClientID = "evoclaw-" + agent
	o.Will = &mqttc.Message{Topic: wire.StatusTopic(agent), Payload: []byte(statusPayload(agent, wire.PresenceOffline)), QoS: 1, Retained: true}
	o.OnConnect = func(c *mqttc.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = c.Publish(ctx, mqttc.Message{Topic: wire.StatusTopic(agent), Payload: []byte(statusPayload(agent, wire.PresenceOnline)), QoS: 1, Retained: true})
	}
}

func statusPayload(agent, presence string) string {
	b, _ := json.Marshal(wire.Status{AgentID: agent, Status: presence})
	return string(b)
}

// TestContractTakeoverEndsOnline reconnects an agent while the broker still
// holds its previous, half-open connection. When the new connection takes the
// client id over, mosquitto publishes the old connection's will before it
// answers the new one, so subscribers may see "offline" just before
// "online"; the embedded broker drops that will (orchestrator/broker,
// takeover.go). What matters is that the retained status ends "online".
func TestContractTakeoverEndsOnline(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		agent := clientID("agent")
		live := subscribed(t, b.URL, wire.StatusTopic(agent))
		mqtttest.DialRaw(t, strings.TrimPrefix(b.URL, "tcp://"), mqtttest.RawConnect{
			ClientID:  "evoclaw-" + agent,
			WillTopic: wire.StatusTopic(agent), WillPayload: statusPayload(agent, wire.PresenceOffline), WillRetain: true,
		})
		connect(t, b.URL, func(o *mqttc.Options) { agentOptions(o, agent) })
		live.Await(t, statusPayload(agent, wire.PresenceOnline))

		retained := subscribed(t, b.URL, wire.StatusTopic(agent))
		testenv.Eventually(t, waitFor, func() bool { return len(retained.All()) > 0 }, "retained status delivered")
		if got, want := string(retained.All()[0].Payload), statusPayload(agent, wire.PresenceOnline); got != want {
			t.Fatalf("retained status after takeover = %s, want %s", got, want)
		}
	})
}
