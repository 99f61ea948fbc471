package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Where a request comes from, as the per-source limits of the embedded
// authorization server count it (registrations, consent pages waiting,
// wrong sign-in answers): the peer's IP address, or, when the peer is a
// proxy the operator trusts (AuthorizationServerConfig.TrustedProxies),
// the address that proxy says it forwarded for. An IPv6 source is its
// /64, the block one host is given. X-Forwarded-For is believed only as
// far as trusted proxies wrote it: it is read from its right end, and the
// first address not of a trusted proxy is the source, so a client cannot
// name another source by sending the header itself.

// ipv6SourceBits is the prefix length an IPv6 source is counted by.
const ipv6SourceBits = 64

// maxForwardedHops bounds the X-Forwarded-For entries read.
const maxForwardedHops = 16

// requestSource returns the source of r, and whether the peer sent
// X-Forwarded-For without being a trusted proxy (a hint that serve runs
// behind a proxy nobody told it about). A peer address that is not an IP
// (a Unix socket) is the source "local".
func requestSource(r *http.Request, trusted []netip.Prefix) (source string, untrustedForward bool) {
	peer, ok := parseIP(r.RemoteAddr)
	if !ok {
		return "local", false
	}
	fwd := r.Header.Values("X-Forwarded-For")
	if !isTrusted(peer, trusted) {
		return sourceKey(peer), len(fwd) > 0
	}
	var hops []string
	for _, v := range fwd {
		hops = append(hops, strings.Split(v, ",")...)
	}
	addr := peer
	for i := len(hops) - 1; i >= 0 && i >= len(hops)-maxForwardedHops; i-- {
		a, ok := parseIP(strings.TrimSpace(hops[i]))
		if !ok {
			break // the trusted hop that wrote it is the source
		}
		addr = a
		if !isTrusted(a, trusted) {
			break
		}
	}
	return sourceKey(addr), false
}

// parseIP parses "ip", "ip:port" or "[ipv6]:port".
func parseIP(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// sourceKey is how a source is counted: an IPv4 address, or an IPv6 /64.
func sourceKey(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(ipv6SourceBits)
	return p.String()
}

// source returns r's source. The first time a peer on loopback or a
// private network sends X-Forwarded-For without being a trusted proxy,
// it says how to make the limits tell the clients behind it apart.
func (a *AuthorizationServer) source(r *http.Request) string {
	s, fwd := requestSource(r, a.cfg.TrustedProxies)
	if fwd {
		if peer, _ := parseIP(r.RemoteAddr); (peer.IsLoopback() || peer.IsPrivate()) && a.proxied.CompareAndSwap(false, true) {
			a.log.Warn("oauth: requests come through a proxy that is not trusted (they carry X-Forwarded-For): every client behind it counts as the one address "+s+" for the sign-in limits; if the proxy is yours, pass --trusted-proxy with its address", "proxy", s)
		}
	}
	return s
}
