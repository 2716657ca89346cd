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
	// HardBlock: a user-configured hard-block rule matches what the call would touch or run
	// (BURROW's code, kept as is).
	HardBlock Code = "hard_policy_block:user_configured_hard_block"
	// BoundaryInvalid: the stored hard-block rules do not validate, so every call is blocked.
	BoundaryInvalid Code = "boundary_config_invalid"
	// InvalidInput: the call's arguments do not fit the tool (a missing path, a number for a
	// command).
	InvalidInput Code = "invalid_input"
	// UnparseableCommand: a shell command that does not parse.
	UnparseableCommand Code = "unparseable_command"
	// UnparseablePatch: a patch that does not parse.
	UnparseablePatch Code = "unparseable_patch"
	// UnresolvablePath: a path that cannot be resolved (a symbolic link loop).
	UnresolvablePath Code = "unresolvable_path"
	// UnsupportedTool: a built-in whose kind Warden cannot review.
	UnsupportedTool Code = "unsupported_tool"
	// UnknownEffect: something the call would do cannot be known statically.
	UnknownEffect Code = "unknown_effect"
	// ArgumentConstraint: the call breaks one of the tool's argument constraints.
	ArgumentConstraint Code = "argument_constraint"
	// ReviewTokenInvalid: the executor refused a review token.
	ReviewTokenInvalid Code = "review_token_invalid"
	// ApprovalDenied: a person answered the card with deny.
	ApprovalDenied Code = "approval_denied"
	// ApprovalTimeout: nobody answered the card before APPROVAL_TIMEOUT_MS.
	ApprovalTimeout Code = "approval_timeout"
	// ApprovalCanceled: the call was abandoned (its caller went away) while its card waited.
	ApprovalCanceled Code = "approval_canceled"
	// SpendAsk: the call would cost more than its connector's askAbove threshold.
	SpendAsk Code = "spend_above_threshold"
	// RunAllowance: the call would take the run above its per-run allowance; nothing was spent.
	RunAllowance Code = "allowance_exceeded"
	// Unpriced: the call's cost cannot be worked out from its arguments.
	Unpriced Code = "cost_unknown"
	// NoAllowance: the call bills, and the session holds no allowance for its connector.
	NoAllowance Code = "no_allowance"
	// RunLimit: the run is over its dollar budget or turns, or has ended.
	RunLimit Code = "run_limit"
	// NotRecorded: the decision could not be written to the audit trail, so the call did not run.
	NotRecorded Code = "audit_unavailable"
	// OutsideWorkspace: a native file tool names a path outside the session's workspace.
	OutsideWorkspace Code = "outside_workspace"
	// PinMismatch: a connector's tool definition no longer has the digest the policy pins, so
	// the tool is withheld until a person accepts the change.
	PinMismatch Code = "pin_mismatch"
	// Unavailable: the server is shutting down and takes no new call; nothing ran.
	Unavailable Code = "unavailable"
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
	{HardBlock, Deny, "A user-configured hard-block rule matches a path the call would touch (read, write, delete, execute or delegate, resolved through symbolic links) or a command it would run; the blocker names the rule."},
	{BoundaryInvalid, Deny, "The stored hard-block rules do not validate, so every call is blocked until they are fixed (BURROW falls back to no rules; Warden never does)."},
	{InvalidInput, Deny, "The call's arguments do not fit the tool: a required field is missing or of the wrong type."},
	{UnparseableCommand, Deny, "The shell command does not parse; the blocker gives the parser's message and position."},
	{UnparseablePatch, Deny, "The patch does not parse as a unified or git diff, so what it touches cannot be known."},
	{UnresolvablePath, Deny, "A path cannot be resolved (a loop of symbolic links, or no workspace to resolve it against)."},
	{UnsupportedTool, Deny, "A built-in maps to a kind that Warden cannot review."},
	{UnknownEffect, Ask, "Something the call would do cannot be known statically (a program from a variable, inline interpreter code, an operand from an expansion): a person is asked, and where nobody can answer the call is denied."},
	{ArgumentConstraint, Deny, "The call breaks one of the tool's argument constraints; the constraint says whether that denies or asks, and why."},
	{ApprovalDenied, Deny, "A person answered the call's card with deny."},
	{ApprovalTimeout, Deny, "Nobody answered the call's card within APPROVAL_TIMEOUT_MS (0 denies at once)."},
	{ApprovalCanceled, Deny, "The call ended while its card waited: its client cancelled it, timed out or went away, its session ended (DELETE, idle timeout, a revoked token), or the server shut down. The card is expired with channel canceled, and an answer given to it later is refused (409): the call can no longer run."},
	{SpendAsk, Ask, "The call would cost more than its connector's askAbove threshold: a person is asked."},
	{RunAllowance, Deny, "The call would take the run above its per-run allowance for the connector; nothing was spent."},
	{Unpriced, Deny, "The call bills, and its cost cannot be worked out from its arguments (a negative or non-numeric figure)."},
	{NoAllowance, Deny, "The call bills, and the run holds no allowance for its connector (a person's chat spends without one)."},
	{RunLimit, Deny, "The run is over its dollar budget, out of turns, or no longer live."},
	{NotRecorded, Deny, "The decision could not be written durably to the audit trail, so the call was not run."},
	{OutsideWorkspace, Deny, "A native file tool (or a command's working directory, or a subagent's root) names a path outside the session's workspace, resolved through symbolic links; Warden's own tools stay inside it."},
	{PinMismatch, Deny, "A connector's tool definition (its name, description and input schema) no longer has the digest the policy pins: the upstream changed it after it was approved. The tool is withheld from every session (not listed, and a call to it is refused) until a person reviews the change and accepts it with warden pin --accept, and the policy is reloaded."},
	{Unavailable, Deny, "The server is shutting down and takes no new call; nothing ran. Calls waiting for a person are cancelled at once (approval_canceled), and calls running are given the shutdown's grace period to finish."},
	{ReviewTokenInvalid, Deny, "The executor refused a review token: fabricated, altered, for another session or call, under an older policy or hard-block revision, expired, or not an allow."},
}

// Codes lists every blocker code with its meaning, for the permissions page.
func Codes() []CodeInfo { return slices.Clone(codes) }
