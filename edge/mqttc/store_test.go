package mqttc

import (
	"testing"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// TestStoreKeepsACopyOfAPublish: what paho's resume takes from the store
// and changes (the DUP flag) is never the packet a connection's writer
// holds, and what the writer changes (the remaining length it computes
// while writing) never reaches the stored packet.
func TestStoreKeepsACopyOfAPublish(t *testing.T) {
	s := newCopyingStore()
	s.Open()
	defer s.Close()
	pub := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	pub.Qos, pub.MessageID, pub.TopicName, pub.Payload = 1, 7, "evoclaw/agents/pi1/reports", []byte(`{"status":"success"}`)
	s.Put("o.7", pub)

	written := make(chan struct{})
	go func() { // the writer, as paho's outgoing goroutine
		defer close(written)
		pub.RemainingLength = 99
		pub.Dup = false
	}()
	got, ok := s.Get("o.7").(*packets.PublishPacket)
	if !ok {
		t.Fatalf("stored %T", s.Get("o.7"))
	}
	got.Dup = true // as paho's resume does
	<-written
	if got == pub {
		t.Fatal("the store gives back the packet the writer holds")
	}
	if pub.Dup {
		t.Error("setting DUP on the stored packet changed the one being written")
	}
	if got.TopicName != pub.TopicName || string(got.Payload) != string(pub.Payload) || got.MessageID != 7 || got.Qos != 1 {
		t.Errorf("stored %+v, want a copy of %+v", got, pub)
	}
	// Other packets are kept as they are.
	sub := packets.NewControlPacket(packets.Subscribe).(*packets.SubscribePacket)
	sub.MessageID = 8
	s.Put("o.8", sub)
	if s.Get("o.8") != sub {
		t.Error("a subscribe packet was not kept as it is")
	}
}
