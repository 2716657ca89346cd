// Package egress decides which hosts a sandboxed command may reach, and enforces it.
//
// It holds the pieces of Warden's outbound network control that do not need a sandbox:
//
//   - [ParseHost] and [ParseTarget] normalise every spelling of a host (decimal, octal and hex
//     IPv4 in all their short forms, IPv4-mapped, -compatible and NAT64 IPv6, zones, brackets,
//     trailing dots, case, IDNA) so that an address is always judged as the address it is.
//   - [Classify] knows the never-allowed ranges (loopback, private, link-local and cloud
//     metadata, carrier-grade NAT, multicast, broadcast, unspecified and a few more) and the
//     documentation ranges, which are allowed only when listed.
//   - [Allowlist] holds the entries an operator lists: hosts, *.domain, public IPs and CIDRs
//     narrower than /8 (IPv4) or /32 (IPv6), each with an optional :port. A never-allowed,
//     malformed or too broad entry is an error naming its position; too broad includes a
//     wildcard over a public suffix of either section of the public suffix list (*.co.uk,
//     *.github.io) or over a domain with one below it (*.amazonaws.com), and a host that is a
//     suffix itself. A table generated from golang.org/x/net/publicsuffix's own
//     (gen_suffixes.go) knows which domains have one below them.
//   - Ports: every reachable host is reachable on 80 and 443, in both modes; an entry without a
//     port lists its hosts on those, an entry with a port on that port only.
//   - [Checker] judges a target: allow or deny, with a stable reason code. A name is resolved
//     once, every address it resolves to is checked, and the addresses that were checked are
//     returned so that the connection goes to exactly those (no DNS rebinding). The addresses
//     of this host's interfaces are refused in every mode (ReasonHostAddress); they are read
//     over netlink and read again only after a subscription to address changes has a message,
//     so an allowed check costs one non-blocking read, never a dump, and sees a change made
//     before it started. One subscription serves every Checker of a network namespace.
//   - [Proxy] is an HTTP forward proxy and CONNECT handler that enforces the check, dials only
//     checked addresses, refuses a connection that turns out to reach this host itself (its
//     source address is its destination), checks the TLS server name a tunnel starts with, and
//     can be widened in place ([Proxy.AllowOnce]).
//   - [Proxy.Substitute] has a proxy write protected values in place of their placeholders
//     ([NewPlaceholder]) only in requests to the hosts each may go to, terminating TLS for
//     those hosts with a per-session [CA], and refuse a placeholder anywhere else
//     (ReasonPlaceholder): the values never enter the sandbox.
//   - [FromEnv] reads SANDBOX_EGRESS and SANDBOX_EGRESS_ALLOWLIST.
//
// docs/egress.md describes the rules for operators.
package egress
