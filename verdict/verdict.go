// Package verdict holds the vocabulary every Warden decision is written in: the three
// decisions, and the stable blocker codes that say why a call was not simply allowed.
//
// It is a leaf package so that the surface, the reviewer and the gate can share one Decision
// type without depending on each other. The zero Decision is Deny: a verdict nobody filled in
// never allows anything.
package verdict

import (
	"fmt"
	"slices"
)

// Decision is allow, ask or deny. The zero value is Deny.
type Decision uint8

const (
	// Deny refuses the call.
	Deny Decision = iota
	// Ask parks the call until a person answers.
	Ask
	// Allow lets the call run.
	Allow
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "deny"
}

// MarshalText writes the decision as "allow", "ask" or "deny".
func (d Decision) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads "allow", "ask" or "deny".
func (d *Decision) UnmarshalText(b []byte) error {
	switch string(b) {
	case "allow":
		*d = Allow
	case "ask":
		*d = Ask
	case "deny":
		*d = Deny
	default:
		return fmt.Errorf("unknown decision %q: want allow, ask or deny", b)
	}
	return nil
}

// Code is a stable blocker code. Codes are part of Warden's interface: they appear in audit
// records, API responses and the permissions page, and are never renamed.
type Code string

// The blocker codes.
const (
	// PermissionDenied: the tool is not in the session's surface.
	PermissionDenied Code = "permission_denied"
	// ApprovalRequired: the tool asks a person before each call while approvals are on.
	ApprovalRequired Code = "approval_required"
	// NoApprovalChannel: the tool needs an approval and nobody can answer in this session.
	NoApprovalChannel Code = "no_approval_channel"
	// SwitchOff: the tool's calls need an operator switch that is off.
	SwitchOff Code = "switch_off"
)

// CodeInfo documents a code.
type CodeInfo struct {
	Code     Code
	Decision Decision
	Meaning  string
}

var codes = []CodeInfo{
	{PermissionDenied, Deny, "The tool is not in the session's surface: it was never described to the model, and a call to it is refused and recorded."},
	{ApprovalRequired, Ask, "The tool asks a person before each call while approvals are on (REQUIRE_WRITE_APPROVAL)."},
	{NoApprovalChannel, Deny, "The tool needs a person's approval and the session has nobody to ask: the refusal is the control."},
	{SwitchOff, Deny, "The tool's calls need an operator switch that is off; the tool stays registered and refuses before any request leaves Warden."},
}

// Codes lists every blocker code with its meaning, for the permissions page.
func Codes() []CodeInfo { return slices.Clone(codes) }
