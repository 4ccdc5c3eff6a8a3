package mqttc

import (
	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// copyingStore is paho's memory store, keeping a copy of each publish
// packet instead of the packet itself.
//
// Why: paho keeps an unacknowledged publish in its store and sends the
// same packet to the connection's writer. After a reconnect its resume
// takes the stored packet, sets its DUP flag and sends it again, while
// the new connection's writer may be writing that very packet (a data
// race in paho, upstream issue 703, seen under -race when the broker
// restarts). Stored as a copy, the packet resume changes is never one a
// writer holds: Put runs in the publishing goroutine, before the packet
// is handed to the writer.
type copyingStore struct {
	paho.Store
}

func newCopyingStore() *copyingStore { return &copyingStore{Store: paho.NewMemoryStore()} }

// Put stores a copy of a publish packet, and any other packet as it is.
func (s *copyingStore) Put(key string, m packets.ControlPacket) {
	if p, ok := m.(*packets.PublishPacket); ok {
		cp := *p // the payload is shared: neither paho nor we change it
		m = &cp
	}
	s.Store.Put(key, m)
}
