package surface_test

import (
	"testing"

	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// egressPolicy offers sandbox_allow_host to a person (who can answer its cards) and to a robot
// with the widest ceiling but nobody to ask.
const egressPolicy = `
version: 1
builtins:
  - name: files_read
  - name: net_fetch
  - name: sandbox_allow_host
roles:
  - id: robot
    description: Unattended, with the widest ceiling.
    ceiling: ["*"]
tenants:
  - id: house
    owner: true
`

// TestEgressCard checks requirement X3: sandbox_allow_host exists only where a person can answer
// and the egress mode is allowlist; where it exists, each call asks.
func TestEgressCard(t *testing.T) {
	p := parse(t, egressPolicy)
	const card = "sandbox_allow_host"
	tests := []struct {
		name   string
		role   string
		env    map[string]string
		given  bool
		reason string // a part of the explanation of an absent card
	}{
		{name: "a person, approvals on, egress unset", role: "person", given: true},
		{name: "a person, egress allowlist", role: "person", env: map[string]string{"SANDBOX_EGRESS": "allowlist"}, given: true},
		{name: "a person, egress ALLOWLIST", role: "person", env: map[string]string{"SANDBOX_EGRESS": "ALLOWLIST"}, given: true},
		{name: "a person, an egress typo counts as the allowlist", role: "person", env: map[string]string{"SANDBOX_EGRESS": "opne"}, given: true},
		{
			name: "a person, egress open", role: "person", env: map[string]string{"SANDBOX_EGRESS": "open"},
			reason: `SANDBOX_EGRESS is open ("open"): every public host is reachable, there is nothing to ask for`,
		},
		{
			name: "a person, egress OPEN", role: "person", env: map[string]string{"SANDBOX_EGRESS": "OPEN"},
			reason: `SANDBOX_EGRESS is open ("OPEN")`,
		},
		{
			name: "a person, approvals off", role: "person", env: map[string]string{"REQUIRE_WRITE_APPROVAL": "false"},
			reason: "approvals are off (REQUIRE_WRITE_APPROVAL is off",
		},
		{
			name: "nobody to ask", role: "robot",
			reason: "it asks a person before each call and role robot has no approval channel",
		},
		{
			name: "nobody to ask, egress open", role: "robot", env: map[string]string{"SANDBOX_EGRESS": "open"},
			reason: "SANDBOX_EGRESS is open",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, tt.env, surface.Spec{Role: tt.role, Tenant: "house"})
			if s.Has(card) != tt.given {
				t.Fatalf("Has(%s) = %v, want %v (surface %v)", card, !tt.given, tt.given, s.Tools())
			}
			// Only the card is concerned: the other tools stay.
			if !s.Has("files_read") || !s.Has("net_fetch") {
				t.Errorf("the surface lost another tool: %v", s.Tools())
			}
			if tt.given {
				if g := s.Gate(card); g.Decision != verdict.Ask || g.Code != verdict.ApprovalRequired {
					t.Errorf("Gate(%s) = %s %s (%s); want ask %s", card, g.Decision, g.Code, g.Reason, verdict.ApprovalRequired)
				}
				return
			}
			checkExplains(t, s, map[string]explainWant{card: {surface.FilterGate, tt.reason}})
		})
	}
}

// TestEgressCardChild checks that a child session of a person, which can ask the same person,
// holds the card only as its parent does.
func TestEgressCardChild(t *testing.T) {
	p := parse(t, `
version: 1
builtins:
  - name: spawn_subagent
  - name: sandbox_allow_host
roles:
  - id: person
    limits: {maxDelegationDepth: 1}
tenants:
  - {id: house, owner: true}
`)
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"SANDBOX_EGRESS": "Open"}, false},
	} {
		parent := openOK(t, p, tt.env, surface.Spec{Role: "person", Tenant: "house"})
		child := childOK(t, parent, "", "")
		if parent.Has("sandbox_allow_host") != tt.want || child.Has("sandbox_allow_host") != tt.want {
			t.Errorf("%v: parent %v, child %v; want the card %v in both", tt.env, parent.Tools(), child.Tools(), tt.want)
		}
	}
}
