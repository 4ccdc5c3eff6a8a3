package mqttc_test

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
)

// TestOversizedPacketFromTheBrokerIsNeverRead: a broker (or whoever
// publishes through one without ACLs) that announces a 200 MiB packet gets
// the connection closed before the client allocates it, and the client
// reconnects. Before, paho allocated the packet whole as announced and
// waited for its bytes: 200 MiB taken, and a client deaf until its
// keepalive ran out.
func TestOversizedPacketFromTheBrokerIsNeverRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 8)
	go func() { // ends when the listener closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	// serve answers a CONNECT and then sends what.
	serve := func(c net.Conn, what []byte) {
		t.Cleanup(func() { c.Close() })
		hdr := make([]byte, 2)
		if _, err := io.ReadFull(c, hdr); err != nil || hdr[0] != 0x10 || hdr[1]&0x80 != 0 {
			t.Errorf("first packet % x, %v; want a short CONNECT", hdr, err)
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(hdr[1])); err != nil {
			t.Error(err)
			return
		}
		if _, err := c.Write(append([]byte{0x20, 2, 0, 0}, what...)); err != nil {
			t.Error(err)
		}
		go io.Copy(io.Discard, c) // pings; ends when c closes
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	accepted := make(chan struct{})
	go func() {
		serve(<-conns, append(mqtttest.RawHeader(0x30, 200<<20), 0, 5, 'e', 'v', 'o'))
		close(accepted)
	}()
	connect(t, "tcp://"+ln.Addr().String(), func(o *mqttc.Options) {
		o.KeepAlive, o.MaxPacketBytes = time.Minute, 1<<20
	})
	<-accepted
	select {
	case again := <-conns:
		serve(again, nil)
	case <-time.After(waitFor):
		t.Fatal("the client did not drop the connection that announced 200 MiB")
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("the client allocated %d MiB for a packet it should refuse unread", grew>>20)
	}
}
