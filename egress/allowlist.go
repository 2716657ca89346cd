package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The kinds of allowlist error, matched with errors.Is.
var (
	// ErrMalformed: the entry is not a host, *.domain, IP address or CIDR with an optional
	// :port.
	ErrMalformed = errors.New("malformed entry")
	// ErrNeverAllowed: the entry is, contains or overlaps a never-allowed range or name.
	ErrNeverAllowed = errors.New("never allowed")
	// ErrTooBroad: a CIDR of /8 or wider (IPv4), /32 or wider (IPv6), a bare *, a wildcard over
	// a public suffix of either section of the public suffix list (*.com, *.co.uk, *.github.io)
	// or over a domain with one below it (*.amazonaws.com), or a host that is a public suffix.
	ErrTooBroad = errors.New("too broad")
)

// Limits on CIDR entries: the prefix must be longer than these, so an IPv4 entry is at most a
// /9 and an IPv6 entry at most a /33. A /32 is a whole ISP's IPv6 allocation, the analogue of
// IPv4's /8.
const (
	MinPrefixIPv4 = 9
	MinPrefixIPv6 = 33
)

// An EntryError is one bad allowlist entry.
type EntryError struct {
	// Position is the entry's 1-based place among the non-empty entries of the list.
	Position int
	// Entry is the entry as written.
	Entry string
	// Err says what is wrong; it wraps ErrMalformed, ErrNeverAllowed or ErrTooBroad.
	Err error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("allowlist entry %d (%q): %v", e.Position, e.Entry, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// A ListError holds every bad entry of a list, in order.
type ListError []*EntryError

func (l ListError) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the entries' errors, so errors.Is finds ErrTooBroad and the others.
func (l ListError) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// An Allowlist is a compiled, immutable list of entries: safe for concurrent use.
//
// Entries are:
//   - a host name, which matches that name only (github.com does not match api.github.com);
//   - *.domain, which matches every name below domain at any depth, but not domain itself;
//   - an IP address, which matches that address as a target (a name is never allowed because
//     it resolves to a listed address: names are listed as names);
//   - a CIDR, which matches the addresses it holds, under the same rule.
//
// Each may end in :port (github.com:22, *.example.com:8443, 203.0.113.7:22,
// [2001:db8::1]:8443, 203.0.113.0/24:8443). An entry without a port lists its hosts on the
// default ports, 80 and 443; an entry with one lists them on that port only. A host listed by
// both is reachable on the three.
//
// The nil *Allowlist is empty.
type Allowlist struct {
	entries  []string // canonical, in order, without duplicates
	names    map[string][]listing
	suffixes map[string][]listing // domain → its *.domain entries
	prefixes []prefixEntry
}

// A listing is one entry as it lists a host: on the default ports (port 0) or on one port.
type listing struct {
	entry string
	port  uint16
}

// allows reports whether l lists its host on port; port 0 (a target without a port) is
// allowed by every listing.
func (l listing) allows(port uint16) bool {
	return port == 0 || l.port == port || l.port == 0 && defaultPort(port)
}

// defaultPort reports whether p is one of the ports every reachable host is reachable on,
// HTTP's and HTTPS's.
func defaultPort(p uint16) bool { return p == 80 || p == 443 }

type prefixEntry struct {
	prefix netip.Prefix
	listing
}

// forbiddenNames are names that mean the local host or a metadata service whatever they
// resolve to, refused before any lookup and never listable. The address check is the real
// defence; this one also holds when names are judged without resolving them.
var forbiddenNames = map[string]string{
	"localhost":                  "loopback (RFC 6761)",
	"metadata.google.internal":   "cloud instance metadata (Google Cloud)",
	"metadata.goog":              "cloud instance metadata (Google Cloud)",
	"instance-data.ec2.internal": "cloud instance metadata (AWS)",
}

// forbiddenName reports why a normalised name may never be reached, if it may not.
func forbiddenName(n string) (string, bool) {
	if why, ok := forbiddenNames[n]; ok {
		return why, true
	}
	if strings.HasSuffix(n, ".localhost") {
		return "loopback (RFC 6761)", true
	}
	return "", false
}

// ParseAllowlist parses entries separated by commas or white space, as SANDBOX_EGRESS_ALLOWLIST
// and --allowlist hold them. Empty entries are skipped. Every bad entry is reported, in a
// ListError.
func ParseAllowlist(s string) (*Allowlist, error) {
	return NewAllowlist(splitEntries(s))
}

func splitEntries(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// NewAllowlist compiles a list of entries. Empty strings are skipped and do not count as
// positions. Every bad entry is reported, in a ListError; the list is then nil.
func NewAllowlist(entries []string) (*Allowlist, error) {
	return (*Allowlist)(nil).add(entries)
}

// With returns a new list holding a's entries and the given ones; a is unchanged. Positions in
// errors count the new entries only.
func (a *Allowlist) With(entries ...string) (*Allowlist, error) {
	return a.add(entries)
}

func (a *Allowlist) add(entries []string) (*Allowlist, error) {
	out := &Allowlist{names: map[string][]listing{}, suffixes: map[string][]listing{}}
	if a != nil {
		out.entries = slices.Clone(a.entries)
		for k, v := range a.names {
			out.names[k] = slices.Clone(v)
		}
		for k, v := range a.suffixes {
			out.suffixes[k] = slices.Clone(v)
		}
		out.prefixes = slices.Clone(a.prefixes)
	}
	var errs ListError
	pos := 0
	for _, raw := range entries {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		pos++
		e, err := parseEntry(raw)
		if err != nil {
			errs = append(errs, &EntryError{Position: pos, Entry: raw, Err: err})
			continue
		}
		if slices.Contains(out.entries, e.canon) {
			continue
		}
		out.entries = append(out.entries, e.canon)
		l := listing{entry: e.canon, port: e.port}
		switch {
		case e.prefix.IsValid():
			out.prefixes = append(out.prefixes, prefixEntry{e.prefix, l})
		case e.wildcard:
			out.suffixes[e.name] = append(out.suffixes[e.name], l)
		default:
			out.names[e.name] = append(out.names[e.name], l)
		}
	}
	if errs != nil {
		return nil, errs
	}
	return out, nil
}

// An entry is one parsed allowlist entry.
type entry struct {
	canon    string       // the canonical spelling
	name     string       // the host name, or the domain of *.domain
	wildcard bool         // *.name
	prefix   netip.Prefix // an address (as a full-length prefix) or a CIDR
	port     uint16       // 0: the default ports
}

// parseEntry parses one entry: host, *.domain, IP or CIDR, each with an optional :port.
func parseEntry(raw string) (entry, error) {
	e := strings.TrimSpace(raw)
	switch {
	case strings.Contains(e, "://"):
		return entry{}, fmt.Errorf("%w: an entry is a host, *.domain, an IP address or a CIDR (each with an optional :port), not a URL", ErrMalformed)
	case strings.ContainsAny(e, "/") && !strings.HasPrefix(e, "*"):
		return parsePrefixEntry(e)
	}
	host, portText, err := splitHostPort(e)
	if err != nil {
		return entry{}, fmt.Errorf("%w: %s", ErrMalformed, strings.Replace(hostProblem(err), "a URL or host[:port]", "host[:port]", 1))
	}
	var port uint16
	if portText != "" {
		if port, err = parsePort(portText); err != nil {
			return entry{}, fmt.Errorf("%w: %s", ErrMalformed, hostProblem(err))
		}
	}
	var out entry
	switch {
	case host == "*" || host == "*.":
		return entry{}, fmt.Errorf("%w: * would allow every host; use SANDBOX_EGRESS=open for that", ErrTooBroad)
	case strings.HasPrefix(host, "*."):
		out, err = parseWildcard(host[2:])
	case strings.Contains(host, "*"):
		return entry{}, fmt.Errorf("%w: a wildcard is allowed only as a whole first label, *.domain", ErrMalformed)
	default:
		out, err = parseHostEntry(host)
	}
	if err != nil {
		return entry{}, err
	}
	out.port = port
	out.canon = withPort(out.canon, out.prefix, port)
	return out, nil
}

// withPort appends :port to a canonical entry, bracketing a single IPv6 address.
func withPort(canon string, p netip.Prefix, port uint16) string {
	switch {
	case port == 0:
		return canon
	case p.IsValid() && p.IsSingleIP() && !strings.Contains(canon, "/"):
		return netip.AddrPortFrom(p.Addr(), port).String()
	}
	return canon + ":" + strconv.Itoa(int(port))
}

func parseHostEntry(s string) (entry, error) {
	h, err := ParseHost(s)
	if err != nil {
		return entry{}, fmt.Errorf("%w: %s", ErrMalformed, hostProblem(err))
	}
	if h.IsAddr() {
		if r, ok := Classify(h.Addr()); ok && r.NeverAllowed {
			return entry{}, fmt.Errorf("%w: %s is %s (%s)", ErrNeverAllowed, h.Addr(), r.Name, r.Prefix)
		}
		return entry{canon: h.Addr().String(), prefix: netip.PrefixFrom(h.Addr(), h.Addr().BitLen())}, nil
	}
	if why, ok := forbiddenName(h.Name()); ok {
		return entry{}, fmt.Errorf("%w: %s is %s", ErrNeverAllowed, h.Name(), why)
	}
	if err := suffixHost(h.Name()); err != nil {
		return entry{}, err
	}
	return entry{canon: h.Name(), name: h.Name()}, nil
}

func parseWildcard(domain string) (entry, error) {
	h, err := ParseHost(domain)
	if err != nil {
		return entry{}, fmt.Errorf("%w: %s", ErrMalformed, hostProblem(err))
	}
	if h.IsAddr() {
		return entry{}, fmt.Errorf("%w: a wildcard goes over a domain name, not an address", ErrMalformed)
	}
	d := h.Name()
	if why, ok := forbiddenName("x." + d); ok {
		return entry{}, fmt.Errorf("%w: names below %s are %s", ErrNeverAllowed, d, why)
	}
	if !strings.Contains(d, ".") {
		return entry{}, fmt.Errorf("%w: *.%s would allow a whole top-level domain", ErrTooBroad, d)
	}
	if err := suffixWildcard(d); err != nil {
		return entry{}, err
	}
	return entry{canon: "*." + d, name: d, wildcard: true}, nil
}

// parsePrefixEntry parses a CIDR, with an optional :port after its length
// (203.0.113.0/24:8443, 2001:db8::/48:8443: the length never holds a colon).
func parsePrefixEntry(e string) (entry, error) {
	var port uint16
	slash := strings.LastIndexByte(e, '/')
	if bits, portText, ok := strings.Cut(e[slash+1:], ":"); ok {
		var err error
		if port, err = parsePort(portText); err != nil {
			return entry{}, fmt.Errorf("%w: %s", ErrMalformed, hostProblem(err))
		}
		e = e[:slash+1] + bits
	}
	p, err := netip.ParsePrefix(e)
	if err != nil {
		return entry{}, fmt.Errorf("%w: not a CIDR (want address/bits, such as 203.0.113.0/24, and an optional :port)", ErrMalformed)
	}
	if p.Addr().Zone() != "" {
		return entry{}, fmt.Errorf("%w: a CIDR has no zone", ErrMalformed)
	}
	if r, ok := neverAllowedHolding(p); ok {
		return entry{}, fmt.Errorf("%w: it lies in %s, %s", ErrNeverAllowed, r.Prefix, r.Name)
	}
	if p.Addr().Is4() && p.Bits() < MinPrefixIPv4 {
		return entry{}, fmt.Errorf("%w: an IPv4 CIDR must be narrower than /8 (/%d at most)", ErrTooBroad, MinPrefixIPv4)
	}
	if p.Addr().Is6() && p.Bits() < MinPrefixIPv6 {
		return entry{}, fmt.Errorf("%w: an IPv6 CIDR must be narrower than /32 (/%d at most)", ErrTooBroad, MinPrefixIPv6)
	}
	if p.Addr().Is4In6() || embedsIPv4(p) {
		return entry{}, fmt.Errorf("%w: this range carries IPv4 addresses; write them as IPv4", ErrMalformed)
	}
	if p.Masked() != p {
		return entry{}, fmt.Errorf("%w: host bits are set; the network is %s", ErrMalformed, p.Masked())
	}
	if r, ok := neverAllowedOverlap(p); ok {
		return entry{}, fmt.Errorf("%w: it overlaps %s, %s", ErrNeverAllowed, r.Prefix, r.Name)
	}
	return entry{canon: withPort(p.String(), p, port), prefix: p, port: port}, nil
}

// hostProblem is a ParseHost error without its "invalid host: " prefix.
func hostProblem(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidHost.Error()+": ")
}

// embedsIPv4 reports whether p overlaps an IPv6 range whose addresses canonicalAddr turns into
// IPv4 ones, so that an entry written over it could never match.
func embedsIPv4(p netip.Prefix) bool {
	for _, e := range embedding {
		if e.Overlaps(p) {
			return true
		}
	}
	return false
}

var embedding = []netip.Prefix{
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// Entries returns the canonical entries, in order, without duplicates.
func (a *Allowlist) Entries() []string {
	if a == nil {
		return nil
	}
	return slices.Clone(a.entries)
}

// Len returns the number of entries.
func (a *Allowlist) Len() int {
	if a == nil {
		return 0
	}
	return len(a.entries)
}

// String returns the canonical entries joined by commas: a list ParseAllowlist reads back.
func (a *Allowlist) String() string { return strings.Join(a.Entries(), ",") }

// MatchName returns an entry that lists the normalised name n, on any port.
func (a *Allowlist) MatchName(n string) (string, bool) { return a.matchName(n, 0) }

// MatchAddr returns an entry that lists the address, on any port.
func (a *Allowlist) MatchAddr(addr netip.Addr) (string, bool) { return a.matchAddr(addr, 0) }

// Match returns an entry that lists h, on any port.
func (a *Allowlist) Match(h Host) (string, bool) { return a.MatchPort(h, 0) }

// MatchPort returns an entry that lists h on port: one without a port when port is 80 or 443,
// or one that names port. Port 0 (no port) is matched by any entry that lists h.
func (a *Allowlist) MatchPort(h Host, port uint16) (string, bool) {
	if h.IsAddr() {
		return a.matchAddr(h.Addr(), port)
	}
	return a.matchName(h.Name(), port)
}

func firstAllowing(ls []listing, port uint16) (string, bool) {
	for _, l := range ls {
		if l.allows(port) {
			return l.entry, true
		}
	}
	return "", false
}

func (a *Allowlist) matchName(n string, port uint16) (string, bool) {
	if a == nil {
		return "", false
	}
	if e, ok := firstAllowing(a.names[n], port); ok {
		return e, true
	}
	for i := 0; i < len(n); i++ {
		if n[i] == '.' {
			if e, ok := firstAllowing(a.suffixes[n[i+1:]], port); ok {
				return e, true
			}
		}
	}
	return "", false
}

func (a *Allowlist) matchAddr(addr netip.Addr, port uint16) (string, bool) {
	if a == nil {
		return "", false
	}
	addr = canonicalAddr(addr)
	for _, p := range a.prefixes {
		if p.prefix.Contains(addr) && p.allows(port) {
			return p.entry, true
		}
	}
	return "", false
}

// defaultEntries are package registries, code hosts, CDNs and reference sites: enough to install
// dependencies and read documentation. Code hosts accept pushes and CDNs serve anyone's files,
// so an agent that can reach them can also send data there; the list trades that for a sandbox
// that can build.
var defaultEntries = []string{
	// Go
	"proxy.golang.org", "sum.golang.org", "go.dev", "pkg.go.dev", "golang.org",
	// JavaScript
	"registry.npmjs.org", "registry.yarnpkg.com",
	// Python
	"pypi.org", "files.pythonhosted.org",
	// Rust
	"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org",
	// Ruby
	"rubygems.org", "index.rubygems.org",
	// Java
	"repo.maven.apache.org", "repo1.maven.org",
	// Debian, Ubuntu, Alpine
	"deb.debian.org", "security.debian.org", "archive.ubuntu.com", "security.ubuntu.com",
	"dl-cdn.alpinelinux.org",
	// Code hosts
	"github.com", "api.github.com", "codeload.github.com", "raw.githubusercontent.com",
	"objects.githubusercontent.com", "gitlab.com", "bitbucket.org",
	// CDNs
	"cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com",
	// Reference
	"developer.mozilla.org", "docs.python.org", "docs.rs",
}

// DefaultAllowlist returns the list used when SANDBOX_EGRESS_ALLOWLIST is unset or empty:
// package registries (Go, npm, PyPI, crates.io, RubyGems, Maven Central, Debian, Ubuntu,
// Alpine), code hosts (GitHub, GitLab, Bitbucket), CDNs (jsDelivr, unpkg, cdnjs) and reference
// sites (MDN, the Python docs, docs.rs). Entries lists them.
func DefaultAllowlist() *Allowlist { return defaultAllowlist }

var defaultAllowlist = func() *Allowlist {
	a, err := NewAllowlist(defaultEntries)
	if err != nil {
		panic("egress: the default allowlist does not compile: " + err.Error())
	}
	return a
}()
