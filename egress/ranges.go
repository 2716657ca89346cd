package egress

import (
	"net/netip"
	"slices"
)

// A Range is an address range Warden treats specially.
type Range struct {
	// Prefix is the range.
	Prefix netip.Prefix
	// Name says what the range is, for messages: "loopback", "private (RFC 1918)", ...
	Name string
	// NeverAllowed is true for the ranges no list, mode or answer can open; false for the
	// documentation ranges, which are reachable only when listed.
	NeverAllowed bool
}

// ranges is the table behind Classify, most specific first so that a message names the
// metadata endpoint rather than the range around it. Sources: the IANA special-purpose
// address registries, and the cloud providers' metadata endpoints.
var ranges = func() []Range {
	never := func(p, name string) Range {
		return Range{Prefix: netip.MustParsePrefix(p), Name: name, NeverAllowed: true}
	}
	doc := func(p, name string) Range {
		return Range{Prefix: netip.MustParsePrefix(p), Name: name}
	}
	return []Range{
		// IPv4.
		never("169.254.169.254/32", "cloud instance metadata (link-local)"),
		never("100.100.100.200/32", "cloud instance metadata (Alibaba Cloud)"),
		never("168.63.129.16/32", "cloud host endpoint (Azure WireServer)"),
		never("255.255.255.255/32", "broadcast"),
		never("0.0.0.0/8", "unspecified (\"this network\"; 0.0.0.0 reaches the local host)"),
		never("10.0.0.0/8", "private (RFC 1918)"),
		never("100.64.0.0/10", "carrier-grade NAT (RFC 6598)"),
		never("127.0.0.0/8", "loopback"),
		never("169.254.0.0/16", "link-local (cloud metadata lives here)"),
		never("172.16.0.0/12", "private (RFC 1918)"),
		never("192.0.0.0/24", "IETF protocol assignments (not globally reachable)"),
		never("192.88.99.0/24", "6to4 relay anycast (deprecated)"),
		never("192.168.0.0/16", "private (RFC 1918)"),
		never("198.18.0.0/15", "benchmarking (RFC 2544; fake-IP DNS proxies use it)"),
		never("224.0.0.0/4", "multicast"),
		never("240.0.0.0/4", "reserved"),
		doc("192.0.2.0/24", "documentation (TEST-NET-1)"),
		doc("198.51.100.0/24", "documentation (TEST-NET-2)"),
		doc("203.0.113.0/24", "documentation (TEST-NET-3)"),
		// IPv6. The forms that carry an IPv4 address (::ffff:0:0/96 and the like) never get
		// here: canonicalAddr unwraps them first.
		never("fd00:ec2::254/128", "cloud instance metadata (AWS, IPv6)"),
		never("::/128", "unspecified"),
		never("::1/128", "loopback"),
		never("::/96", "IPv4-compatible (deprecated)"),
		never("::ffff:0:0/96", "IPv4-mapped"),
		never("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
		never("100::/64", "discard-only (RFC 6666)"),
		never("2001::/32", "Teredo tunnelling (carries IPv4 addresses)"),
		never("2002::/16", "6to4 tunnelling (carries IPv4 addresses)"),
		never("fc00::/7", "unique local (the IPv6 private range)"),
		never("fe80::/10", "link-local"),
		never("fec0::/10", "site-local (deprecated)"),
		never("ff00::/8", "multicast"),
		doc("2001:db8::/32", "documentation"),
		doc("3fff::/20", "documentation (RFC 9637)"),
	}
}()

// Ranges returns the table [Classify] uses: the never-allowed ranges and the documentation
// ranges, most specific first.
func Ranges() []Range { return slices.Clone(ranges) }

// Classify returns the special range a holds, after the normalisation [ParseHost] applies
// (an IPv4-mapped address is judged as its IPv4 address), and false for an ordinary public
// address. An invalid Addr is reported as never allowed.
func Classify(a netip.Addr) (Range, bool) {
	if !a.IsValid() {
		return Range{Name: "invalid address", NeverAllowed: true}, true
	}
	a = canonicalAddr(a)
	for _, r := range ranges {
		if r.Prefix.Contains(a) {
			return r, true
		}
	}
	return Range{}, false
}

// neverAllowedHolding returns the never-allowed range that holds all of p, if one does: the
// widest, so that 100.64.0.0/10 is named as carrier-grade NAT and not by the metadata address
// inside it.
func neverAllowedHolding(p netip.Prefix) (Range, bool) {
	var best Range
	found := false
	for _, r := range ranges {
		if r.NeverAllowed && r.Prefix.Bits() <= p.Bits() && r.Prefix.Contains(p.Addr()) && (!found || r.Prefix.Bits() < best.Prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

// neverAllowedOverlap returns the first never-allowed range that p overlaps.
func neverAllowedOverlap(p netip.Prefix) (Range, bool) {
	for _, r := range ranges {
		if r.NeverAllowed && r.Prefix.Overlaps(p) {
			return r, true
		}
	}
	return Range{}, false
}
