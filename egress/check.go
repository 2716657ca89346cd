package egress

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// Mode is the egress mode. The zero Mode is ModeAllowlist, so an unset mode fails closed.
type Mode uint8

// The modes.
const (
	// ModeAllowlist reaches only what the allowlist lists.
	ModeAllowlist Mode = iota
	// ModeOpen reaches every public address: everything but the never-allowed ranges, and
	// the documentation ranges unless they are listed.
	ModeOpen
)

func (m Mode) String() string {
	if m == ModeOpen {
		return "open"
	}
	return "allowlist"
}

// Reason is the stable code of a decision, shown to the agent, the operator and the audit
// trail.
type Reason string

// The reasons. The first four allow; the rest deny.
const (
	// ReasonListed: an allowlist entry lists the host (Decision.Entry names it).
	ReasonListed Reason = "listed"
	// ReasonAllowedOnce: an entry added to a running proxy with AllowOnce lists the host.
	ReasonAllowedOnce Reason = "allowed_once"
	// ReasonAllowedTenant: an entry of the list a proxy shares with its tenant
	// (ProxyOptions.Tenant: hosts a person allowed for the tenant) lists the host.
	ReasonAllowedTenant Reason = "allowed_tenant"
	// ReasonOpen: the mode is open and every address is public.
	ReasonOpen Reason = "open_mode"

	// ReasonNotAllowed: the mode is allowlist and no entry lists the host.
	ReasonNotAllowed Reason = "not_allowed"
	// ReasonPrivate: the host is, or resolves to, a never-allowed address (loopback,
	// private, link-local, metadata, ...) or is a name that always means one (localhost).
	ReasonPrivate Reason = "private_address"
	// ReasonHostAddress: the host is, or resolves to, one of this host's own addresses (those
	// of its interfaces, now), which no list or mode opens: a service listening on all
	// interfaces would be reached there. Also when those addresses cannot be read.
	ReasonHostAddress Reason = "host_address"
	// ReasonReserved: in open mode, the host is or resolves to a documentation address that
	// no entry lists.
	ReasonReserved Reason = "reserved_address"
	// ReasonUnresolvable: the name did not resolve, or resolved to no address.
	ReasonUnresolvable Reason = "unresolvable"
	// ReasonNotResolved: names are judged without resolving them (Options.NoResolve), and in
	// open mode an unlisted name can only be judged by its addresses.
	ReasonNotResolved Reason = "not_resolved"
	// ReasonPortNotAllowed: the host may be reached, but not on this port. Every reachable
	// host is reachable on 80 and 443; another port needs an entry that names it
	// (host:port), and an entry with a port lists its hosts on that port only.
	ReasonPortNotAllowed Reason = "port_not_allowed"
	// ReasonInvalidTarget: the target is not a URL or host[:port], or its host is not a valid
	// name or address.
	ReasonInvalidTarget Reason = "invalid_target"
	// ReasonSNIMismatch: a CONNECT tunnel was allowed, but the TLS ClientHello it starts with
	// names a server (SNI) its host does not cover: in allowlist mode neither the CONNECT host
	// nor a listed name; in either mode a never-allowed name or address. Also when a tunnel
	// starts like TLS but its ClientHello cannot be read (malformed, longer than 64 KiB, or
	// not in within DialTimeout). The tunnel is closed before any byte of it is forwarded;
	// Host and Port are the CONNECT target's, and Detail says why, naming the server name
	// when there is one.
	ReasonSNIMismatch Reason = "sni_mismatch"
	// ReasonPlaceholder: the host may be reached, but the request holds a placeholder of a
	// protected value that may not go there (or one the proxy does not hold), or, while
	// placeholders are held, a body with a Content-Encoding, which cannot be read for them, to
	// a host that no placeholder's value may go to. Detail names the variable the placeholder
	// was bound to, never a value.
	ReasonPlaceholder Reason = "placeholder_refused"
)

// A Decision is the answer to one check. The zero Decision denies.
type Decision struct {
	// Allow is true when the target may be reached.
	Allow bool
	// Host is the normalised host (the target as given when it could not be parsed).
	Host string
	// Port is the target's port, 0 when it had none.
	Port uint16
	// Reason is the stable code.
	Reason Reason
	// Detail says why, for people.
	Detail string
	// Entry is the allowlist entry that listed the host, if one did.
	Entry string
	// Addrs are the addresses that were checked, in the resolver's order: for an allowed
	// name, dial these and nothing else. For an address target it is that address; for a name
	// judged without resolving it is empty.
	Addrs []netip.Addr
}

// Verdict returns "allow" or "deny".
func (d Decision) Verdict() string {
	if d.Allow {
		return "allow"
	}
	return "deny"
}

type decisionJSON struct {
	Decision  string   `json:"decision"`
	Host      string   `json:"host"`
	Reason    Reason   `json:"reason"`
	Detail    string   `json:"detail,omitempty"`
	Port      uint16   `json:"port,omitempty"`
	Entry     string   `json:"entry,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
}

// MarshalJSON writes {"decision":"allow|deny","host":...,"reason":...} and the optional
// detail, port, entry and addresses.
func (d Decision) MarshalJSON() ([]byte, error) {
	j := decisionJSON{Decision: d.Verdict(), Host: d.Host, Reason: d.Reason, Detail: d.Detail, Port: d.Port, Entry: d.Entry}
	for _, a := range d.Addrs {
		j.Addresses = append(j.Addresses, a.String())
	}
	return json.Marshal(j)
}

// A Resolver looks names up. *net.Resolver implements it. It is given the normalised name
// (ASCII, no trailing dot) and network "ip".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// absoluteResolver looks names up as fully qualified (a trailing dot), so the system's search
// domains never turn an unlisted short name into a listed or internal one.
type absoluteResolver struct{ r *net.Resolver }

func (a absoluteResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return a.r.LookupNetIP(ctx, network, host+".")
}

// Options configure a Checker. The zero value is the default: allowlist mode, the default
// allowlist, the system resolver.
type Options struct {
	// Mode is the egress mode.
	Mode Mode
	// Allowlist is the list; nil means DefaultAllowlist(). For an empty list, pass an empty
	// one (ParseAllowlist("")).
	Allowlist *Allowlist
	// Resolver looks names up; nil means net.DefaultResolver, asked for fully qualified names.
	Resolver Resolver
	// NoResolve judges names without resolving them: a listed name is allowed as a name
	// (Decision.Addrs is empty), any other name is denied. For what-if checks only: a Proxy
	// needs addresses and refuses such a Checker.
	NoResolve bool
	// RootCAs are the roots a Proxy verifies a host's certificate against where it terminates
	// TLS to put values in place of placeholders (see Proxy.Substitute); nil means this host's
	// system roots. Tests name their own hosts' roots here.
	RootCAs *x509.CertPool
}

// A Checker judges targets. It is immutable and safe for concurrent use.
type Checker struct {
	mode      Mode
	list      *Allowlist
	resolver  Resolver
	noResolve bool
	own       *ownAddrs
	roots     *x509.CertPool
}

// New returns a Checker for o. The host addresses it refuses are those of the network
// namespace of the thread that calls New (in Warden, the process's), as they are at each
// check: it shares with every other Checker there a subscription to their changes.
func New(o Options) *Checker {
	c := &Checker{mode: o.Mode, list: o.Allowlist, resolver: o.Resolver, noResolve: o.NoResolve, own: ownAddrsHere(), roots: o.RootCAs}
	if c.list == nil {
		c.list = DefaultAllowlist()
	}
	if c.resolver == nil {
		c.resolver = absoluteResolver{net.DefaultResolver}
	}
	return c
}

// Mode returns the checker's mode.
func (c *Checker) Mode() Mode { return c.mode }

// Allowlist returns the checker's list.
func (c *Checker) Allowlist() *Allowlist { return c.list }

// Check judges a target: a URL or host[:port] (see ParseTarget).
func (c *Checker) Check(ctx context.Context, target string) Decision {
	return c.check(ctx, target, extras{})
}

// extras are the lists a proxy adds to its checker's: the entries it was widened with, and
// its tenant's. Either may be nil.
type extras struct{ once, tenant *Allowlist }

func (c *Checker) check(ctx context.Context, target string, extra extras) Decision {
	t, err := ParseTarget(target)
	if err != nil {
		return Decision{Host: target, Reason: ReasonInvalidTarget, Detail: err.Error()}
	}
	return c.checkHost(ctx, t.Host, t.Port, extra)
}

// CheckHost judges a parsed host and port (0 for none).
func (c *Checker) CheckHost(ctx context.Context, h Host, port uint16) Decision {
	return c.checkHost(ctx, h, port, extras{})
}

// match looks h up, for port (0: any), in the checker's list, then in the proxy's tenant's,
// then in the entries the proxy was widened with.
func (c *Checker) match(h Host, port uint16, extra extras) (string, Reason, bool) {
	if e, ok := c.list.MatchPort(h, port); ok {
		return e, ReasonListed, true
	}
	if e, ok := extra.tenant.MatchPort(h, port); ok {
		return e, ReasonAllowedTenant, true
	}
	if e, ok := extra.once.MatchPort(h, port); ok {
		return e, ReasonAllowedOnce, true
	}
	return "", "", false
}

// portRefusal is the refusal of an unlisted port for a host no entry lists on it, if the port
// is refused: an entry lists the host on other ports, or (in open mode, where every public host
// is reachable on the default ports) the port is not a default one. Not refused, the host is
// judged as unlisted.
func (c *Checker) portRefusal(d Decision, h Host, port uint16, extra extras) (Decision, bool) {
	if port == 0 || c.mode == ModeOpen && defaultPort(port) {
		return d, false
	}
	if e, _, ok := c.match(h, 0, extra); ok {
		return deny(d, ReasonPortNotAllowed, "%s is not listed on port %d (%s lists it on others: an entry without a port allows 80 and 443, one with a port that port only); list %s to allow it",
			h, port, e, h.hostPort(port)), true
	}
	if c.mode == ModeOpen {
		return deny(d, ReasonPortNotAllowed, "port %d is not allowed: in open mode every public host is reachable on 80 and 443 only; list %s to allow it",
			port, h.hostPort(port)), true
	}
	return d, false
}

func (c *Checker) checkHost(ctx context.Context, h Host, port uint16, extra extras) Decision {
	d := Decision{Host: h.String(), Port: port}
	if !h.IsValid() {
		d.Host, d.Reason, d.Detail = "", ReasonInvalidTarget, "no host"
		return d
	}
	entry, listedBy, listed := c.match(h, port, extra)
	if h.IsAddr() {
		a := h.Addr()
		d.Addrs = []netip.Addr{a}
		if r, ok := Classify(a); ok && r.NeverAllowed {
			return deny(d, ReasonPrivate, "%s is %s (%s), which is never allowed", a, r.Name, r.Prefix)
		}
		if listed {
			if hd, refused := c.hostAddress(d, "", d.Addrs); refused {
				return hd
			}
			return allow(d, listedBy, entry, "%s %s", a, listedAs(a.String(), entry))
		}
		if pd, refused := c.portRefusal(d, h, port, extra); refused {
			return pd
		}
		if c.mode == ModeAllowlist {
			return deny(d, ReasonNotAllowed, "%s is not on the allowlist", a)
		}
		if r, ok := Classify(a); ok {
			return deny(d, ReasonReserved, "%s is %s (%s), reachable only when listed", a, r.Name, r.Prefix)
		}
		if hd, refused := c.hostAddress(d, "", d.Addrs); refused {
			return hd
		}
		return allow(d, ReasonOpen, "", "%s is a public address and the mode is open", a)
	}

	name := h.Name()
	if why, ok := forbiddenName(name); ok {
		return deny(d, ReasonPrivate, "%s is %s, which is never allowed", name, why)
	}
	if !listed {
		// Not resolved: an unlisted name (or port) costs no lookup, so DNS is no side
		// channel here.
		if pd, refused := c.portRefusal(d, h, port, extra); refused {
			return pd
		}
		if c.mode == ModeAllowlist {
			return deny(d, ReasonNotAllowed, "%s is not on the allowlist", name)
		}
	}
	if c.noResolve {
		if listed {
			return allow(d, listedBy, entry, "%s %s; judged as a name, without resolving it", name, listedAs(name, entry))
		}
		return deny(d, ReasonNotResolved, "%s was not resolved, and in open mode an unlisted name is judged by its addresses", name)
	}
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return deny(d, ReasonUnresolvable, "%s does not resolve: %v", name, err)
	}
	if len(addrs) == 0 {
		return deny(d, ReasonUnresolvable, "%s resolves to no address", name)
	}
	checked := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = canonicalAddr(a)
		if r, ok := Classify(a); ok && r.NeverAllowed {
			return deny(d, ReasonPrivate, "%s resolves to %s, %s (%s), which is never allowed", name, a, r.Name, r.Prefix)
		}
		if !slices.Contains(checked, a) {
			checked = append(checked, a)
		}
	}
	if !listed {
		// Open mode, unlisted name: a documentation address must be listed itself.
		for _, a := range checked {
			if r, ok := Classify(a); ok {
				if _, _, ok := c.match(Host{addr: a}, port, extra); !ok {
					return deny(d, ReasonReserved, "%s resolves to %s, %s (%s), reachable only when listed", name, a, r.Name, r.Prefix)
				}
			}
		}
	}
	if hd, refused := c.hostAddress(d, name, checked); refused {
		return hd
	}
	d.Addrs = checked
	if listed {
		return allow(d, listedBy, entry, "%s %s and resolves to %s", name, listedAs(name, entry), addrList(checked))
	}
	return allow(d, ReasonOpen, "", "%s resolves to public addresses (%s) and the mode is open", name, addrList(checked))
}

// hostAddress refuses addrs, the addresses of name ("" for an address target), if one of them
// is one of this host's own now, or if those cannot be read. It costs a system call, so it is
// the last question before an allow: a target refused for another reason does not pay it.
func (c *Checker) hostAddress(d Decision, name string, addrs []netip.Addr) (Decision, bool) {
	own, err := c.own.current()
	if err != nil {
		return deny(d, ReasonHostAddress, "this host's own addresses cannot be read, so no address is allowed: %v", err), true
	}
	for _, a := range addrs {
		if !isOwn(own, a) {
			continue
		}
		if name == "" {
			return deny(d, ReasonHostAddress, "%s is one of this host's own addresses, which are never allowed: it would reach the services listening on this host", a), true
		}
		return deny(d, ReasonHostAddress, "%s resolves to %s, one of this host's own addresses, which are never allowed: it would reach the services listening on this host", name, a), true
	}
	return d, false
}

func deny(d Decision, r Reason, format string, args ...any) Decision {
	// A denied decision carries no address, so nothing can dial one by mistake.
	d.Allow, d.Reason, d.Detail, d.Addrs = false, r, fmt.Sprintf(format, args...), nil
	return d
}

func allow(d Decision, r Reason, entry, format string, args ...any) Decision {
	d.Allow, d.Reason, d.Entry, d.Detail = true, r, entry, fmt.Sprintf(format, args...)
	return d
}

func listedAs(host, entry string) string {
	if host == entry {
		return "is listed"
	}
	return "is listed by " + entry
}

func addrList(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
