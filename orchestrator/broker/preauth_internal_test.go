package broker

import (
	"errors"
	"net"
	"testing"
)

func TestAddressKey(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	tests := []struct {
		addr net.Addr
		want string
	}{
		{tcp("192.0.2.7:1883"), "192.0.2.7"},
		{tcp("[::ffff:192.0.2.7]:1883"), "192.0.2.7"}, // an IPv4 client on a dual-stack socket
		{tcp("[2001:db8:1:2:aaaa::1]:1883"), "2001:db8:1:2::/64"},
		{tcp("[2001:db8:1:2:bbbb::9]:40000"), "2001:db8:1:2::/64"}, // the same host's /64
		{tcp("[2001:db8:1:3::1]:1883"), "2001:db8:1:3::/64"},
		{tcp("[fe80::1%lo]:1883"), "fe80::/64"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, ""}, // not counted
	}
	for _, tt := range tests {
		if got := addressKey(tt.addr); got != tt.want {
			t.Errorf("addressKey(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// TestPendingGate: the per-address bound and the total one, and slots
// given back on both counts, also when the total refuses.
func TestPendingGate(t *testing.T) {
	g := newPendingGate(3, 2)
	steps := []struct {
		enter, leave string
		want         error
	}{
		{enter: "a"}, {enter: "a"},
		{enter: "a", want: errAddressFull},
		{enter: "b"},
		{enter: "c", want: errAllFull}, // c's count is given back
		{leave: "a"},
		{enter: "c"},
		{enter: "b", want: errAllFull},
		{leave: "b"}, {leave: "c"},
		{enter: "c"}, {enter: "a", want: nil},
		{enter: "", want: errAllFull}, // not counted per address, still in all
	}
	for i, s := range steps {
		if s.leave != "" {
			g.leave(s.leave)
			continue
		}
		if err := g.enter(s.enter); !errors.Is(err, s.want) || (s.want == nil && err != nil) {
			t.Fatalf("step %d: enter(%q) = %v, want %v", i, s.enter, err, s.want)
		}
	}
	if len(g.slots) != 3 || g.byAddr["a"] != 2 || g.byAddr["c"] != 1 || len(g.byAddr) != 2 {
		t.Fatalf("held %d, by address %v", len(g.slots), g.byAddr)
	}
}
