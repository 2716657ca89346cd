package surface_test

import (
	"testing"

	"github.com/wardenhq/warden/surface"
)

// TestApprovalByElicitation: a session may answer its own cards by elicitation where its role
// says so and it has an approval channel, and never as a child.
func TestApprovalByElicitation(t *testing.T) {
	const head = `
version: 1
builtins:
  - name: files_read
  - {name: spawn_subagent}
tenants:
  - {id: main}
`
	tests := []struct {
		name   string
		roles  string
		role   string
		want   bool
		wantCh bool
	}{
		{name: "person, by default", role: "person", want: true, wantCh: true},
		{name: "person, turned off", roles: "roles:\n  - {id: person, approvalByElicitation: false}\n", role: "person", wantCh: true},
		{name: "inbound has nobody to ask", role: "inbound"},
		{name: "read_only has nobody to ask", role: "read_only"},
		{name: "a declared role with a channel, off unless written", roles: "roles:\n  - {id: desk, approvalChannel: true, ceiling: ['*']}\n", role: "desk", wantCh: true},
		{name: "a declared role with a channel that asks for it", roles: "roles:\n  - {id: desk, approvalChannel: true, approvalByElicitation: true, ceiling: ['*']}\n", role: "desk", want: true, wantCh: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parse(t, head+tt.roles)
			s := openOK(t, p, nil, surface.Spec{Role: tt.role, Tenant: "main"})
			if s.ApprovalChannel() != tt.wantCh || s.ApprovalByElicitation() != tt.want {
				t.Errorf("ApprovalChannel %v, ApprovalByElicitation %v; want %v, %v",
					s.ApprovalChannel(), s.ApprovalByElicitation(), tt.wantCh, tt.want)
			}
		})
	}

	t.Run("a person's child keeps the channel but is not asked", func(t *testing.T) {
		p := parse(t, head+"roles:\n  - {id: person, limits: {maxDelegationDepth: 1}}\n")
		parent := openOK(t, p, nil, surface.Spec{Role: "person", Tenant: "main"})
		c := childOK(t, parent, "", "")
		if !c.ApprovalChannel() || c.ApprovalByElicitation() {
			t.Errorf("child: ApprovalChannel %v, ApprovalByElicitation %v; want true, false", c.ApprovalChannel(), c.ApprovalByElicitation())
		}
	})
}
