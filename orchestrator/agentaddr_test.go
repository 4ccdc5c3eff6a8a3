package orchestrator

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestAgentAddress: the embedded broker tells the address an agent's
// connection came from, by its client id, for as long as it is connected;
// behind an external broker the answer says it is not known.
func TestAgentAddress(t *testing.T) {
	if _, err := agentAddress(nil)("pi-1"); !errors.Is(err, errExternalBroker) {
		t.Fatalf("external broker: %v", err)
	}
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", ReloadInterval: -1, Users: []broker.User{
		{Name: "pi-1", Role: broker.RoleAgent, Password: "p1"}, {Name: "pi-2", Role: broker.RoleAgent, Password: "p2"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	conn, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-pi-1", Username: "pi-1", Password: "p1"})
	if rc != 0 {
		t.Fatalf("CONNECT refused: %d", rc)
	}
	lookup := agentAddress(b)
	for _, tc := range []struct {
		agent, want, wantErr string
	}{
		{"pi-1", conn.LocalAddr().String(), ""},
		{"pi-2", "", `no client "evoclaw-pi-2" is connected`},
	} {
		got, err := lookup(tc.agent)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.agent, got, err, tc.want, tc.wantErr)
		}
	}
	_ = conn.Close()
	testenv.Eventually(t, 5*time.Second, func() bool {
		_, err := lookup("pi-1")
		return err != nil
	}, "no address once the agent's connection is gone")
}
