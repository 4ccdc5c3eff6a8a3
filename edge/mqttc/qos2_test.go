package mqttc_test

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
)

// TestBrokerWithholdingPubrelCannotGrowTheClient: a broker that sends QoS 2
// publishes and never the PUBREL that ends each (a broker of its own an
// attacker points an agent at, or one in the middle) makes paho keep every
// one of them until then. Before, the client held each publish whole: up to
// 65,535 packets of MaxPacketBytes on one connection (600 of 1 MB took an
// agent from 16 to 713 MB). Now it keeps only their headers.
func TestBrokerWithholdingPubrelCannotGrowTheClient(t *testing.T) {
	const (
		topic = "evoclaw/agents/pi1/commands"
		count = 48
		size  = 256 << 10 // 12 MiB in all
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	pubrecs := make(chan int, 1)
	go func() { // the broker: one connection, ended when the test closes it
		c, err := ln.Accept()
		if err != nil {
			return
		}
		t.Cleanup(func() { c.Close() })
		seen := 0
		for {
			typ, body, err := mqtttest.RawReadPacket(c)
			if err != nil {
				return
			}
			switch typ >> 4 {
			case 1: // CONNECT
				_, err = c.Write([]byte{0x20, 2, 0, 0})
			case 8: // SUBSCRIBE: granted QoS 1, then the QoS 2 publishes
				_, err = c.Write([]byte{0x90, 3, body[0], body[1], 1})
				for i := 1; i <= count && err == nil; i++ {
					pub := append([]byte{0, byte(len(topic))}, topic...)
					pub = append(pub, byte(i>>8), byte(i))
					pub = append(pub, make([]byte, size)...)
					_, err = c.Write(append(mqtttest.RawHeader(0x34, len(pub)), pub...))
				}
			case 5: // PUBREC: the client took the publish; no PUBREL, ever
				if seen++; seen == count {
					pubrecs <- seen
				}
			case 12: // PINGREQ
				_, err = c.Write([]byte{0xd0, 0})
			}
			if err != nil {
				return
			}
		}
	}()
	client := connect(t, "tcp://"+ln.Addr().String(), func(o *mqttc.Options) { o.MaxPacketBytes = 1 << 20 })
	before := heapInUse()
	var delivered atomic.Int64
	if err := client.Subscribe(topic, 1, func(mqttc.Message) { delivered.Add(1) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pubrecs:
	case <-time.After(waitFor):
		t.Fatalf("the client answered %d of %d QoS 2 publishes", delivered.Load(), count)
	}
	if got := delivered.Load(); got != count {
		t.Fatalf("delivered %d publishes, want %d", got, count)
	}
	if grew := heapInUse() - before; grew > count*size/4 {
		t.Fatalf("the client holds %d KiB more after %d QoS 2 publishes of %d KiB whose PUBREL never came; want well under their %d KiB",
			grew>>10, count, size>>10, count*size>>10)
	}
}

// heapInUse is the heap the process holds once garbage is collected.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
