package webtools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrDenied means a host or address is not allowed by the network policy.
var ErrDenied = errors.New("denied by the network policy")

// nonPublic are the ranges denied unless allowed: loopback, private,
// link-local, unique-local, CGNAT, multicast, "this network", NAT64 and
// the documentation and benchmark ranges that no public site uses.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96", "2001:db8::/32",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// policy decides which hosts and addresses webfetch may reach.
type policy struct {
	hosts []string       // allowed host names; empty: any
	nets  []netip.Prefix // allowed although not public
}

func newPolicy(c Config) (policy, error) {
	p := policy{}
	for _, h := range c.AllowHosts {
		p.hosts = append(p.hosts, strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	for _, n := range c.AllowNetworks {
		pre, err := netip.ParsePrefix(n)
		if err != nil {
			return policy{}, err
		}
		p.nets = append(p.nets, pre.Masked())
	}
	return p, nil
}

// checkHost refuses a host name not in the allowlist (when there is one).
func (p policy) checkHost(host string) error {
	if len(p.hosts) == 0 {
		return nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range p.hosts {
		if base, ok := strings.CutPrefix(a, "*."); ok {
			if h == base || strings.HasSuffix(h, "."+base) {
				return nil
			}
		} else if h == a {
			return nil
		}
	}
	return fmt.Errorf("host %q is not in the allowed hosts: %w", host, ErrDenied)
}

// checkAddr refuses an address that is not public unless allowed. The
// ranges are checked without the address's zone ("fe80::1%eth0"): a
// prefix never contains a zoned address, so the zone would let any
// address through.
func (p policy) checkAddr(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	for _, n := range p.nets {
		if n.Contains(a) {
			return nil
		}
	}
	for _, n := range nonPublic {
		if n.Contains(a) {
			return fmt.Errorf("address %s is not public (%s): %w", a, n, ErrDenied)
		}
	}
	// 6to4 and Teredo can tunnel to any IPv4 address; refuse them whole.
	if a.Is6() && (netip.MustParsePrefix("2002::/16").Contains(a) || netip.MustParsePrefix("2001::/32").Contains(a)) {
		return fmt.Errorf("address %s is a tunnelling address: %w", a, ErrDenied)
	}
	return nil
}

// control is a net.Dialer.Control that checks the address being dialled:
// the last word, after any resolution.
func (p policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, ErrDenied)
	}
	return p.checkAddr(ap.Addr())
}

// lookupFunc resolves a host name to addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// dialer dials host:port through lookup, each address checked by the
// policy before the socket connects.
func (p policy) dialer(lookup lookupFunc, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d.Control = p.control
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{a}
		} else if addrs, err = lookup(ctx, host); err != nil {
			return nil, err
		}
		var errs []error
		for _, a := range addrs {
			if err := p.checkAddr(a); err != nil {
				errs = append(errs, err)
				continue
			}
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			return nil, fmt.Errorf("%s has no addresses", host)
		}
		return nil, errors.Join(errs...)
	}
}
