// Package manage is the management plane's data: the tenants, connections, profiles (with
// their grants and allowances) and egress allowlists that change while Warden runs. They are
// kept in the store as objects (Store), each written as the policy file would write it,
// validated by the policy's own compiler as if saved into the file (policy.ParseOverlay), and
// overlaid on the file, which stays the deployment: built-ins, servers, connectors, switches,
// roles and harnesses.
package manage
