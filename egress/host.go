package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrInvalidHost is wrapped by every error of [ParseHost] and [ParseTarget].
var ErrInvalidHost = errors.New("invalid host")

// A Host is a normalised host: either an IP address or a domain name, never both. The zero
// Host is invalid.
type Host struct {
	name string
	addr netip.Addr
}

// IsAddr reports whether h is an IP address.
func (h Host) IsAddr() bool { return h.addr.IsValid() }

// Addr returns h's address, or the zero Addr when h is a name. An IPv4 address is always a
// 4-byte Addr: mapped and embedded forms have been unwrapped.
func (h Host) Addr() netip.Addr { return h.addr }

// Name returns h's domain name: ASCII (IDNA A-labels), lower case, with no trailing dot; ""
// when h is an address.
func (h Host) Name() string { return h.name }

// IsValid reports whether h holds a name or an address.
func (h Host) IsValid() bool { return h.name != "" || h.addr.IsValid() }

// String returns the canonical spelling: the name, or the address (IPv6 without brackets).
func (h Host) String() string {
	if h.addr.IsValid() {
		return h.addr.String()
	}
	return h.name
}

// hostPort joins h and port for dialing or a URL, bracketing IPv6.
func (h Host) hostPort(port uint16) string {
	if port == 0 {
		if h.addr.Is6() {
			return "[" + h.addr.String() + "]"
		}
		return h.String()
	}
	if h.addr.IsValid() {
		return netip.AddrPortFrom(h.addr, port).String()
	}
	return h.name + ":" + strconv.Itoa(int(port))
}

// idnaProfile maps a name the way a lookup does (UTS #46, non-transitional: case, width and
// compatibility mappings, so "ＥＸＡＭＰＬＥ．com" is example.com and "１２７。０。０。１" is an
// address). It does not enforce STD3 or hyphen rules: names with "_" or "--" exist in DNS,
// and validName checks the ASCII result itself.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// ParseHost normalises a host as it appears in a URL's authority or a host:port, without the
// port: a domain name (any case, Unicode or punycode, with or without one trailing dot), an
// IPv4 address in any spelling inet_aton or a browser accepts (127.0.0.1, 127.1, 0x7f.1,
// 0177.0.0.1, 2130706433), or an IPv6 address with or without brackets and a zone. IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), SIIT (::ffff:0:a.b.c.d) and NAT64
// (64:ff9b::a.b.c.d) addresses become the IPv4 address they carry; zones are dropped.
//
// A host whose last label is a number is an IPv4 address or nothing: "1.2.3.256" is an error,
// never a name to look up.
func ParseHost(s string) (Host, error) {
	if s == "" {
		return Host{}, fmt.Errorf("%w: empty", ErrInvalidHost)
	}
	if len(s) > 1024 {
		return Host{}, fmt.Errorf("%w: longer than 1024 bytes", ErrInvalidHost)
	}
	if !utf8.ValidString(s) {
		return Host{}, fmt.Errorf("%w: %q is not UTF-8", ErrInvalidHost, s)
	}
	if s[0] == '[' {
		if !strings.HasSuffix(s, "]") || len(s) < 3 {
			return Host{}, fmt.Errorf("%w: %q: unbalanced brackets", ErrInvalidHost, s)
		}
		inner := s[1 : len(s)-1]
		if a, err := netip.ParseAddr(inner); err == nil {
			return Host{addr: canonicalAddr(a)}, nil
		}
		if a, err := parseIPv4(inner); err == nil && endsInNumber(inner) {
			return Host{addr: a}, nil
		}
		return Host{}, fmt.Errorf("%w: %q is not an IP address", ErrInvalidHost, s)
	}
	if strings.Contains(s, ":") {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return Host{}, fmt.Errorf("%w: %q is neither a name nor an IP address", ErrInvalidHost, s)
		}
		return Host{addr: canonicalAddr(a)}, nil
	}
	mapped, err := idnaProfile.ToASCII(s)
	if err != nil {
		return Host{}, fmt.Errorf("%w: %q: %v", ErrInvalidHost, s, err)
	}
	// One trailing dot is the DNS root; a second one is an empty label.
	mapped = strings.TrimSuffix(mapped, ".")
	if endsInNumber(mapped) {
		a, err := parseIPv4(mapped)
		if err != nil {
			return Host{}, fmt.Errorf("%w: %q ends in a number but is not an IPv4 address: %v", ErrInvalidHost, s, err)
		}
		return Host{addr: a}, nil
	}
	if strings.Contains(mapped, ":") {
		// A full-width colon maps to ':'; an address written so is still not a name.
		a, err := netip.ParseAddr(mapped)
		if err != nil {
			return Host{}, fmt.Errorf("%w: %q is neither a name nor an IP address", ErrInvalidHost, s)
		}
		return Host{addr: canonicalAddr(a)}, nil
	}
	if err := validName(mapped); err != nil {
		return Host{}, fmt.Errorf("%w: %q: %v", ErrInvalidHost, s, err)
	}
	return Host{name: mapped}, nil
}

// validName checks an ASCII, lower-case name without its trailing dot.
func validName(n string) error {
	if n == "" {
		return errors.New("empty name")
	}
	if len(n) > 253 {
		return errors.New("longer than 253 bytes")
	}
	for label := range strings.SplitSeq(n, ".") {
		if label == "" {
			return errors.New("empty label")
		}
		if len(label) > 63 {
			return errors.New("a label is longer than 63 bytes")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q is not allowed in a name", rune(c))
			}
		}
	}
	return nil
}

// endsInNumber reports whether the last label of s is a number (decimal, octal or 0x hex), as
// the URL standard decides whether a host is an IPv4 address.
func endsInNumber(s string) bool {
	last := s[strings.LastIndexByte(s, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		for _, c := range []byte(last[2:]) {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range []byte(last) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// parseIPv4 parses the forms inet_aton(3) and the URL standard accept: one to four parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the bytes that remain, so 127.1
// is 127.0.0.1 and 2130706433 is too.
func parseIPv4(s string) (netip.Addr, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, errors.New("more than four parts")
	}
	var v uint64
	for i, p := range parts {
		n, err := parseIPv4Part(p)
		if err != nil {
			return netip.Addr{}, err
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, fmt.Errorf("part %q is more than 255", p)
			}
			v = v<<8 | n
			continue
		}
		rest := uint(8 * (4 - len(parts) + 1))
		if n >= 1<<rest {
			return netip.Addr{}, fmt.Errorf("part %q does not fit in %d bits", p, rest)
		}
		v = v<<rest | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

func parseIPv4Part(p string) (uint64, error) {
	base, digits := uint64(10), p
	switch {
	case p == "":
		return 0, errors.New("empty part")
	case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
		base, digits = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	var n uint64
	for _, c := range []byte(digits) {
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, fmt.Errorf("part %q is not a number", p)
		}
		if d >= base {
			return 0, fmt.Errorf("part %q is not a base-%d number", p, base)
		}
		n = n*base + d
		if n > 0xffffffff {
			return 0, fmt.Errorf("part %q is too large", p)
		}
	}
	return n, nil
}

// canonicalAddr drops the zone and unwraps the IPv6 forms that carry an IPv4 address, so that
// the IPv4 address is what is judged and dialled.
func canonicalAddr(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if a.Is4In6() {
		return a.Unmap()
	}
	if !a.Is6() {
		return a
	}
	b := a.As16()
	v4 := netip.AddrFrom4([4]byte(b[12:]))
	switch {
	case allZero(b[:12]):
		// IPv4-compatible (::a.b.c.d, deprecated), but :: and ::1 are themselves.
		if allZero(b[12:15]) && b[15] <= 1 {
			return a
		}
		return v4
	case allZero(b[:8]) && b[8] == 0xff && b[9] == 0xff && allZero(b[10:12]):
		// SIIT IPv4-translated, ::ffff:0:a.b.c.d.
		return v4
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && allZero(b[4:12]):
		// The NAT64 well-known prefix 64:ff9b::/96 reaches the IPv4 address it carries.
		return v4
	}
	return a
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// A Target is what a check is asked about: a host, and the port when one was given or the
// scheme implies one.
type Target struct {
	// Host is the normalised host.
	Host Host
	// Port is the port, 0 when neither given nor implied by the scheme.
	Port uint16
	// Scheme is the URL's scheme in lower case, "" for a host[:port].
	Scheme string
}

// String returns the target as host[:port], normalised.
func (t Target) String() string { return t.Host.hostPort(t.Port) }

// defaultPorts are the ports a URL scheme implies.
var defaultPorts = map[string]uint16{"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}

// ParseTarget parses a URL (anything with "://") or a host[:port]. An IPv6 address with a
// port is written in brackets, [2001:db8::1]:443; without brackets it is an address with no
// port. The host is normalised as by [ParseHost].
func ParseTarget(s string) (Target, error) {
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return Target{}, fmt.Errorf("%w: %v", ErrInvalidHost, err)
		}
		return targetFromURL(u)
	}
	host, port, err := splitHostPort(s)
	if err != nil {
		return Target{}, err
	}
	h, err := ParseHost(host)
	if err != nil {
		return Target{}, err
	}
	t := Target{Host: h}
	if port != "" {
		if t.Port, err = parsePort(port); err != nil {
			return Target{}, err
		}
	}
	return t, nil
}

// targetFromURL takes the target from a parsed URL's scheme and host.
func targetFromURL(u *url.URL) (Target, error) {
	if u.Host == "" {
		return Target{}, fmt.Errorf("%w: %q names no host", ErrInvalidHost, u.Redacted())
	}
	host := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		host = "[" + host + "]"
	}
	h, err := ParseHost(host)
	if err != nil {
		return Target{}, err
	}
	t := Target{Host: h, Scheme: strings.ToLower(u.Scheme), Port: defaultPorts[strings.ToLower(u.Scheme)]}
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		if t.Port, err = parsePort(p); err != nil {
			return Target{}, err
		}
	}
	return t, nil
}

// splitHostPort splits host[:port], [v6][:port] or a bare IPv6 address. A port that is
// present but empty ("host:") is reported as "" with an error.
func splitHostPort(s string) (host, port string, err error) {
	if strings.ContainsAny(s, "/?#@ \t\r\n") {
		return "", "", fmt.Errorf("%w: %q: want a URL or host[:port]", ErrInvalidHost, s)
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("%w: %q: unbalanced brackets", ErrInvalidHost, s)
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' || rest == ":" {
			return "", "", fmt.Errorf("%w: %q: want [address]:port", ErrInvalidHost, s)
		}
		return host, rest[1:], nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		host, port, _ := strings.Cut(s, ":")
		if port == "" {
			return "", "", fmt.Errorf("%w: %q: empty port", ErrInvalidHost, s)
		}
		return host, port, nil
	default:
		return s, "", nil
	}
}

func parsePort(p string) (uint16, error) {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: port %q is not a number from 1 to 65535", ErrInvalidHost, p)
	}
	return uint16(n), nil
}
