//go:build !nocluster

package cluster

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/cluster/clustertest"
)

// actorNode is an actor system whose remote listens on a loopback port
// with the options Start would give it. One test process runs one:
// protoactor's remote sets gRPC's global logger at every start, which
// races with another remote's server.
type actorNode struct {
	sys  *actor.ActorSystem
	addr string
}

// startActorNode starts an actor node with tls; it stops when the test
// ends.
func startActorNode(t *testing.T, tls TLSFiles) *actorNode {
	t.Helper()
	port := testenv.FreePort(t)
	opts, err := remoteOptions(Config{TLS: tls}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	n := &actorNode{sys: actor.NewActorSystem(), addr: fmt.Sprintf("127.0.0.1:%d", port)}
	r := remote.NewRemote(n.sys, remote.Configure("127.0.0.1", port, opts...))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false); n.sys.Shutdown() })
	return n
}

// TestActorPortMutualTLS: over real sockets, a member with [cluster.tls]
// refuses a gRPC client in plain text, one without a certificate and one
// with a certificate of another CA at the handshake: none gets past the
// connect request a member sends first, while the same client with a
// member's certificate does. Its own dials, and every dial the options
// give, start with a TLS handshake: protoactor's default plain-text dial
// is gone.
func TestActorPortMutualTLS(t *testing.T) {
	dir := t.TempDir()
	pki := testPKI(t, dir, "n1", "n2")
	other := testPKI(t, filepath.Join(dir, "other"), "x")["x"]
	n1 := startActorNode(t, pki["n1"])
	_, member, err := pki["n2"].Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, foreign, err := other.Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	clustertest.CheckPort(t, n1.addr, member, foreign)

	// The member's own dial to another member.
	sn := sniff(t)
	n1.sys.Root.Send(actor.NewPID(sn.addr, "echo"), wrapperspb.String("hi"))
	if first := sn.first(t); !tlsRecord(first) {
		t.Fatalf("the member dialed with %q, want a TLS handshake", first)
	}
	// The dial options themselves, and the old default for contrast.
	for _, tc := range []struct {
		name string
		tls  TLSFiles
		want bool
	}{{"tls", pki["n1"], true}, {"none", TLSFiles{}, false}} {
		opts, err := remoteOptions(Config{TLS: tc.tls}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		sn := sniff(t)
		conn, err := grpc.NewClient(sn.addr, remote.Configure("127.0.0.1", 0, opts...).DialOptions...)
		if err != nil {
			t.Fatal(err)
		}
		conn.Connect()
		first := sn.first(t)
		conn.Close()
		if tlsRecord(first) != tc.want {
			t.Errorf("%s: the dial options send %q first; TLS handshake: %v, want %v", tc.name, first, tlsRecord(first), tc.want)
		}
	}
}

// tlsRecord reports whether b starts a TLS handshake record (content
// type 22, version 3.x); a plain-text gRPC dial starts "PRI * HTTP/2.0".
func tlsRecord(b []byte) bool { return len(b) >= 2 && b[0] == 0x16 && b[1] == 0x03 }

// sniffer is a listener that records the first bytes of the first
// connection made to it and closes it.
type sniffer struct {
	addr  string
	bytes chan []byte
}

func sniff(t *testing.T) *sniffer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sniffer{addr: l.Addr().String(), bytes: make(chan []byte, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 5)
		n, _ := io.ReadFull(c, b) // what arrived is the answer, short or not
		s.bytes <- b[:n]
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return s
}

// first returns the first bytes the sniffer read.
func (s *sniffer) first(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-s.bytes:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("nothing dialed the sniffer")
		return nil
	}
}
