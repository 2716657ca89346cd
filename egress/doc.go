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
//     narrower than /8 (IPv4) or /32 (IPv6). A never-allowed, malformed or too broad entry is an
//     error naming its position.
//   - [Checker] judges a target: allow or deny, with a stable reason code. A name is resolved
//     once, every address it resolves to is checked, and the addresses that were checked are
//     returned so that the connection goes to exactly those (no DNS rebinding).
//   - [Proxy] is an HTTP forward proxy and CONNECT handler that enforces the check, dials only
//     checked addresses, checks the TLS server name a tunnel starts with, and can be widened in
//     place ([Proxy.AllowOnce]).
//   - [FromEnv] reads SANDBOX_EGRESS and SANDBOX_EGRESS_ALLOWLIST.
//
// docs/egress.md describes the rules for operators.
package egress
