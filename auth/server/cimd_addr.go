package server

import (
	"fmt"
	"net/netip"
)

// cimdIPv4Refused are the IPv4 ranges a Client ID Metadata Document is never
// fetched from, with what each is: everything that is not a public unicast
// address on the Internet. The ranges are text, parsed where they are used
// (a fetch is rare, the parse cheap), so that the tables are static data
// rather than work every mcp-stdio process does when it starts.
var cimdIPv4Refused = []refusedRange{
	{"0.0.0.0/8", "an unspecified (this-network) address"},
	{"10.0.0.0/8", "a private (RFC 1918) address"},
	{"100.64.0.0/10", "a carrier-grade NAT (RFC 6598) address"},
	{"127.0.0.0/8", "a loopback address"},
	{"169.254.0.0/16", "a link-local address"},
	{"172.16.0.0/12", "a private (RFC 1918) address"},
	{"192.0.0.0/24", "an IETF protocol assignment (RFC 6890)"},
	{"192.0.2.0/24", "a documentation (TEST-NET-1) address"},
	{"192.88.99.0/24", "a 6to4 relay anycast address"},
	{"192.168.0.0/16", "a private (RFC 1918) address"},
	{"198.18.0.0/15", "a benchmarking (RFC 2544) address"},
	{"198.51.100.0/24", "a documentation (TEST-NET-2) address"},
	{"203.0.113.0/24", "a documentation (TEST-NET-3) address"},
	{"224.0.0.0/4", "a multicast address"},
	{"240.0.0.0/4", "a reserved or broadcast address"},
}

// refusedRange is a range of addresses (CIDR notation) and what they are.
type refusedRange struct{ prefix, what string }

// contains reports whether addr is in r.
func (r refusedRange) contains(addr netip.Addr) bool { return inRange(r.prefix, addr) }

// IPv6 ranges that embed an IPv4 address, and ranges refused outright.
const (
	cimdGlobalUnicast6 = "2000::/3"
	cimdIPv4Compat     = "::/96"
	cimd6to4           = "2002::/16"
	cimdTeredo         = "2001::/32"
	cimdNAT64          = "64:ff9b::/96"
)

var cimdIPv6Refused = []refusedRange{
	{"2001:db8::/32", "a documentation address"},
	{"3fff::/20", "a documentation address"},
	// Teredo (2001::/32, judged above), benchmarking, ORCHID and
	// the other special-purpose assignments.
	{"2001::/23", "an IETF protocol assignment"},
}

// inRange reports whether addr is in prefix (CIDR notation).
func inRange(prefix string, addr netip.Addr) bool {
	return netip.MustParsePrefix(prefix).Contains(addr)
}

// checkPublicAddr reports, as an error naming the kind of address, why a
// Client ID Metadata Document must not be fetched from addr; nil means addr
// is a public unicast address on the Internet. The fetcher calls it on
// every address the host resolves to, and dials only addresses it passed.
//
// IPv6 addresses that carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d,
// IPv4-compatible ::a.b.c.d, 6to4 2002::/16, Teredo 2001::/32 with both its
// server and its client address, NAT64 64:ff9b::/96) are judged by the IPv4
// they embed, so that ::ffff:127.0.0.1 or 2002:7f00:1:: is refused like
// 127.0.0.1. Any other IPv6 address must be global unicast (2000::/3) and
// outside the documentation ranges and the IETF protocol assignments
// (2001::/23: benchmarking, ORCHID and the like):
// loopback, unspecified, link-local, site-local, unique-local (fc00::/7),
// multicast, the local-use NAT64 prefix and addresses with a zone are
// refused.
func checkPublicAddr(addr netip.Addr) error {
	if !addr.IsValid() {
		return fmt.Errorf("%v is not an IP address", addr)
	}
	if addr.Zone() != "" {
		return fmt.Errorf("%v is a scoped (zoned) address", addr)
	}
	if addr.Is4() {
		return checkPublicIPv4(addr, addr)
	}
	if addr.Is4In6() {
		return checkPublicIPv4(addr.Unmap(), addr)
	}
	b := addr.As16()
	switch {
	case addr.IsUnspecified():
		return fmt.Errorf("%v is an unspecified address", addr)
	case addr.IsLoopback():
		return fmt.Errorf("%v is a loopback address", addr)
	case inRange(cimdIPv4Compat, addr):
		return checkPublicIPv4(netip.AddrFrom4([4]byte(b[12:16])), addr)
	case inRange(cimdNAT64, addr):
		return checkPublicIPv4(netip.AddrFrom4([4]byte(b[12:16])), addr)
	case inRange(cimd6to4, addr):
		return checkPublicIPv4(netip.AddrFrom4([4]byte(b[2:6])), addr)
	case inRange(cimdTeredo, addr):
		if err := checkPublicIPv4(netip.AddrFrom4([4]byte(b[4:8])), addr); err != nil {
			return err
		}
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return checkPublicIPv4(netip.AddrFrom4(client), addr)
	case addr.IsLinkLocalUnicast():
		return fmt.Errorf("%v is a link-local address", addr)
	case addr.IsMulticast():
		return fmt.Errorf("%v is a multicast address", addr)
	case addr.IsPrivate():
		return fmt.Errorf("%v is a unique local (fc00::/7) address", addr)
	case !inRange(cimdGlobalUnicast6, addr):
		return fmt.Errorf("%v is not a global unicast address", addr)
	}
	for _, r := range cimdIPv6Refused {
		if r.contains(addr) {
			return fmt.Errorf("%v is %s", addr, r.what)
		}
	}
	return nil
}

// checkPublicIPv4 judges v4, the IPv4 address of orig (orig itself, or the
// IPv6 address that embeds it).
func checkPublicIPv4(v4, orig netip.Addr) error {
	for _, r := range cimdIPv4Refused {
		if r.contains(v4) {
			if v4 == orig {
				return fmt.Errorf("%v is %s", orig, r.what)
			}
			return fmt.Errorf("%v embeds %v, %s", orig, v4, r.what)
		}
	}
	return nil
}
