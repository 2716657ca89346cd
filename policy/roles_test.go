package policy_test

import (
	"testing"

	"github.com/wardenhq/warden/policy"
)

// TestApprovalByElicitation checks the default of each role and what a policy may set: on for
// person alone unless written, off wherever a policy turns it off, and on for a declared role
// with an approval channel that asks for it.
func TestApprovalByElicitation(t *testing.T) {
	tests := []struct {
		name string
		give string
		want map[string]bool
	}{
		{
			name: "defaults",
			give: "roles:\n  - {id: helpdesk, approvalChannel: true}\n  - {id: bot}\n",
			want: map[string]bool{
				policy.RolePerson: true, policy.RoleInbound: false, policy.RoleCoworker: false,
				policy.RoleSpecialist: false, policy.RoleGoalAgent: false, policy.RoleGoalReviewer: false,
				policy.RoleReadOnly: false, "helpdesk": false, "bot": false,
			},
		},
		{
			name: "turned off for person",
			give: "roles:\n  - {id: person, approvalByElicitation: false}\n",
			want: map[string]bool{policy.RolePerson: false},
		},
		{
			name: "off written where it is off already",
			give: "roles:\n  - {id: inbound, approvalByElicitation: false}\n  - {id: bot, approvalByElicitation: false}\n",
			want: map[string]bool{policy.RoleInbound: false, "bot": false},
		},
		{
			name: "on for a declared role with an approval channel",
			give: "roles:\n  - {id: helpdesk, approvalChannel: true, approvalByElicitation: true}\n",
			want: map[string]bool{"helpdesk": true, policy.RolePerson: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.Parse(fileName, []byte(doc(tt.give)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for id, want := range tt.want {
				r, ok := p.Role(id)
				if !ok {
					t.Fatalf("no role %s", id)
				}
				if r.ApprovalByElicitation != want {
					t.Errorf("role %s: ApprovalByElicitation = %v, want %v", id, r.ApprovalByElicitation, want)
				}
			}
		})
	}
}
