package mqttc

import (
	"strings"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// copyingStore is paho's memory store, keeping a copy of each publish
// packet instead of the packet itself, and of a publish from the broker
// only its header.
//
// Why a copy of what the client sends: paho keeps an unacknowledged
// publish in its store and sends the same packet to the connection's
// writer. After a reconnect its resume takes the stored packet, sets its
// DUP flag and sends it again, while the new connection's writer may be
// writing that very packet (a data race in paho, upstream issue 703, seen
// under -race when the broker restarts). Stored as a copy, the packet
// resume changes is never one a writer holds: Put runs in the publishing
// goroutine, before the packet is handed to the writer.
//
// Why only the header of what the broker sends: paho keeps every QoS 2
// publish it receives, whole, until the broker sends its PUBREL, which a
// broker (or whoever stands between it and the client) may never do. One
// connection holds up to 65,535 of them (one per packet id), each up to
// Options.MaxPacketBytes: 600 publishes of 1 MB from such a broker took
// an agent to 713 MB of private memory (16 MB at QoS 1); a Pi Zero has 512.
// Nothing ever reads a received publish back from the store: the client
// always asks for a clean session (pahoOptions), so paho only deletes the
// entry when it answers the broker. The header (packet id, QoS, flags) is
// what is kept, a hundred bytes or so each.
type copyingStore struct {
	paho.Store
}

func newCopyingStore() *copyingStore { return &copyingStore{Store: paho.NewMemoryStore()} }

// inboundPrefix starts the keys paho gives what it received from the
// broker ("i.{packet id}"); what it sends has "o.".
const inboundPrefix = "i."

// Put stores a copy of a publish packet, without its topic and payload
// when the broker sent it, and any other packet as it is.
func (s *copyingStore) Put(key string, m packets.ControlPacket) {
	if p, ok := m.(*packets.PublishPacket); ok {
		cp := *p // the payload is shared: neither paho nor we change it
		if strings.HasPrefix(key, inboundPrefix) {
			cp.TopicName, cp.Payload = "", nil
		}
		m = &cp
	}
	s.Store.Put(key, m)
}
