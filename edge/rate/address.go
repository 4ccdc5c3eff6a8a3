package rate

import "net/netip"

// AddressKey is what a per-client bound counts by, for a peer at hostport
// ("ip:port", as net.Addr.String and http.Request.RemoteAddr give it): the
// IP, an IPv4-mapped one as IPv4, an IPv6 one cut to its /64 (one host's
// or one site's share); "" for an address that is not an IP one.
func AddressKey(hostport string) string {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return ""
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
