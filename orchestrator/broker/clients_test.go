package broker_test

import (
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

func TestClientsListsConnectedOnly(t *testing.T) {
	t.Parallel()
	b := start(t, broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if got := b.Clients(); len(got) != 0 {
		t.Fatalf("fresh broker lists %v", got)
	}
	c := mqtttest.Connect(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "lister-a"})
	got := b.Clients()
	if len(got) != 1 || got[0].ID != "lister-a" || got[0].Remote == "" {
		t.Fatalf("clients %+v, want lister-a with its address", got)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for len(b.Clients()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("clients after disconnect: %+v", b.Clients())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
