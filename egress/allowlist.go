package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode"
)

// The kinds of allowlist error, matched with errors.Is.
var (
	// ErrMalformed: the entry is not a host, *.domain, IP address or CIDR.
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
// The nil *Allowlist is empty.
type Allowlist struct {
	entries  []string // canonical, in order, without duplicates
	names    map[string]string
	suffixes map[string]string // domain → "*.domain"
	prefixes []prefixEntry
}

type prefixEntry struct {
	prefix netip.Prefix
	entry  string
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
	out := &Allowlist{names: map[string]string{}, suffixes: map[string]string{}}
	if a != nil {
		out.entries = slices.Clone(a.entries)
		for k, v := range a.names {
			out.names[k] = v
		}
		for k, v := range a.suffixes {
			out.suffixes[k] = v
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
		canon, err := out.addEntry(raw)
		if err != nil {
			errs = append(errs, &EntryError{Position: pos, Entry: raw, Err: err})
			continue
		}
		if !slices.Contains(out.entries, canon) {
			out.entries = append(out.entries, canon)
		}
	}
	if errs != nil {
		return nil, errs
	}
	return out, nil
}

// addEntry compiles one entry into out, returning its canonical spelling.
func (out *Allowlist) addEntry(raw string) (string, error) {
	e := strings.TrimSpace(raw)
	switch {
	case strings.Contains(e, "://"):
		return "", fmt.Errorf("%w: an entry is a host, *.domain, an IP address or a CIDR, not a URL", ErrMalformed)
	case strings.ContainsAny(e, "/") && !strings.HasPrefix(e, "*"):
		return out.addPrefix(e)
	case e == "*" || e == "*.":
		return "", fmt.Errorf("%w: * would allow every host; use SANDBOX_EGRESS=open for that", ErrTooBroad)
	case strings.HasPrefix(e, "*."):
		return out.addWildcard(e[2:])
	case strings.Contains(e, "*"):
		return "", fmt.Errorf("%w: a wildcard is allowed only as a whole first label, *.domain", ErrMalformed)
	}
	if _, port, err := splitHostPort(e); err == nil && port != "" {
		return "", fmt.Errorf("%w: an entry names a host, not a port", ErrMalformed)
	}
	h, err := ParseHost(e)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrMalformed, hostProblem(err))
	}
	if h.IsAddr() {
		if r, ok := Classify(h.Addr()); ok && r.NeverAllowed {
			return "", fmt.Errorf("%w: %s is %s (%s)", ErrNeverAllowed, h.Addr(), r.Name, r.Prefix)
		}
		p := netip.PrefixFrom(h.Addr(), h.Addr().BitLen())
		canon := h.Addr().String()
		out.prefixes = append(out.prefixes, prefixEntry{p, canon})
		return canon, nil
	}
	if why, ok := forbiddenName(h.Name()); ok {
		return "", fmt.Errorf("%w: %s is %s", ErrNeverAllowed, h.Name(), why)
	}
	if err := suffixHost(h.Name()); err != nil {
		return "", err
	}
	if _, ok := out.names[h.Name()]; !ok {
		out.names[h.Name()] = h.Name()
	}
	return h.Name(), nil
}

func (out *Allowlist) addWildcard(domain string) (string, error) {
	h, err := ParseHost(domain)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrMalformed, hostProblem(err))
	}
	if h.IsAddr() {
		return "", fmt.Errorf("%w: a wildcard goes over a domain name, not an address", ErrMalformed)
	}
	d := h.Name()
	if why, ok := forbiddenName("x." + d); ok {
		return "", fmt.Errorf("%w: names below %s are %s", ErrNeverAllowed, d, why)
	}
	if !strings.Contains(d, ".") {
		return "", fmt.Errorf("%w: *.%s would allow a whole top-level domain", ErrTooBroad, d)
	}
	if err := suffixWildcard(d); err != nil {
		return "", err
	}
	canon := "*." + d
	out.suffixes[d] = canon
	return canon, nil
}

func (out *Allowlist) addPrefix(e string) (string, error) {
	p, err := netip.ParsePrefix(e)
	if err != nil {
		return "", fmt.Errorf("%w: not a CIDR (want address/bits, such as 203.0.113.0/24)", ErrMalformed)
	}
	if p.Addr().Zone() != "" {
		return "", fmt.Errorf("%w: a CIDR has no zone", ErrMalformed)
	}
	if r, ok := neverAllowedHolding(p); ok {
		return "", fmt.Errorf("%w: it lies in %s, %s", ErrNeverAllowed, r.Prefix, r.Name)
	}
	if p.Addr().Is4() && p.Bits() < MinPrefixIPv4 {
		return "", fmt.Errorf("%w: an IPv4 CIDR must be narrower than /8 (/%d at most)", ErrTooBroad, MinPrefixIPv4)
	}
	if p.Addr().Is6() && p.Bits() < MinPrefixIPv6 {
		return "", fmt.Errorf("%w: an IPv6 CIDR must be narrower than /32 (/%d at most)", ErrTooBroad, MinPrefixIPv6)
	}
	if p.Addr().Is4In6() || embedsIPv4(p) {
		return "", fmt.Errorf("%w: this range carries IPv4 addresses; write them as IPv4", ErrMalformed)
	}
	if p.Masked() != p {
		return "", fmt.Errorf("%w: host bits are set; the network is %s", ErrMalformed, p.Masked())
	}
	if r, ok := neverAllowedOverlap(p); ok {
		return "", fmt.Errorf("%w: it overlaps %s, %s", ErrNeverAllowed, r.Prefix, r.Name)
	}
	canon := p.String()
	out.prefixes = append(out.prefixes, prefixEntry{p, canon})
	return canon, nil
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

// MatchName returns the entry that lists the normalised name n, if one does.
func (a *Allowlist) MatchName(n string) (string, bool) {
	if a == nil {
		return "", false
	}
	if e, ok := a.names[n]; ok {
		return e, true
	}
	for i := 0; i < len(n); i++ {
		if n[i] == '.' {
			if e, ok := a.suffixes[n[i+1:]]; ok {
				return e, true
			}
		}
	}
	return "", false
}

// MatchAddr returns the entry that lists the address, if one does.
func (a *Allowlist) MatchAddr(addr netip.Addr) (string, bool) {
	if a == nil {
		return "", false
	}
	addr = canonicalAddr(addr)
	for _, p := range a.prefixes {
		if p.prefix.Contains(addr) {
			return p.entry, true
		}
	}
	return "", false
}

// Match returns the entry that lists h, if one does.
func (a *Allowlist) Match(h Host) (string, bool) {
	if h.IsAddr() {
		return a.MatchAddr(h.Addr())
	}
	return a.MatchName(h.Name())
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
