package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/approval"
)

// standings are the suite's standing approvals, oldest first.
func standings() []*approval.Standing {
	mk := func(id, tenant, tool, digest string, created time.Duration) *approval.Standing {
		return &approval.Standing{ID: id, Tenant: tenant, Tool: tool, Digest: digest,
			CardID: "card-" + id, Approver: "alice@" + tenant, Created: at(created)}
	}
	return []*approval.Standing{
		mk("st1", "t1", "mcp__github__github_comment", "sha256:d1", 0),
		mk("st2", "t1", "mcp__github__github_comment", "sha256:d2", time.Second),
		mk("st3", "t2", "mcp__github__github_comment", "sha256:d1", 2*time.Second),
		mk("st4", "t1", "mcp__agentmail__agentmail_send_message", "sha256:d1", 3*time.Second),
	}
}

func addStandings(t *testing.T, s approval.Store) []*approval.Standing {
	t.Helper()
	all := standings()
	for _, i := range []int{2, 0, 3, 1} { // saved in an order other than their times
		if err := s.AddStanding(t.Context(), all[i]); err != nil {
			t.Fatalf("AddStanding(%s): %v", all[i].ID, err)
		}
	}
	return standings()
}

func testStandingFind(t *testing.T, o Opener) {
	s := open(t, o)
	st := addStandings(t, s)
	const comment, send = "mcp__github__github_comment", "mcp__agentmail__agentmail_send_message"
	tests := []struct {
		name                 string
		tenant, tool, digest string
		want                 *approval.Standing
	}{
		{"exact", "t1", comment, "sha256:d1", st[0]},
		{"another digest", "t1", comment, "sha256:d2", st[1]},
		{"another tenant's own", "t2", comment, "sha256:d1", st[2]},
		{"another tool", "t1", send, "sha256:d1", st[3]},
		{"digest of another tool", "t1", send, "sha256:d2", nil},
		{"digest saved only in another tenant", "t2", comment, "sha256:d2", nil},
		{"unknown tenant", "t3", comment, "sha256:d1", nil},
		// the suite's reading: "" is no wildcard here; a standing approval is a tenant's
		{"empty tenant is no wildcard", "", comment, "sha256:d1", nil},
		{"tenant names are exact", "T1", comment, "sha256:d1", nil},
		{"tool names are exact", "t1", "mcp__github__github_comment_x", "sha256:d1", nil},
		{"a digest prefix is not the digest", "t1", comment, "sha256:d", nil},
		{"empty digest", "t1", comment, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.FindStanding(t.Context(), tt.tenant, tt.tool, tt.digest)
			if tt.want == nil {
				if !errors.Is(err, approval.ErrNotFound) {
					t.Fatalf("FindStanding = %+v, %v; want ErrNotFound", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("FindStanding: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("FindStanding mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func testStandingList(t *testing.T, o Opener) {
	s := open(t, o)
	st := addStandings(t, s)
	if err := s.RevokeStanding(t.Context(), "t1", "st2", at(time.Hour)); err != nil {
		t.Fatalf("RevokeStanding: %v", err)
	}
	st[1].Revoked = at(time.Hour)
	tests := []struct {
		name   string
		tenant string
		want   []*approval.Standing
	}{
		{"a tenant's, revoked included, newest first", "t1", []*approval.Standing{st[3], st[1], st[0]}},
		{"another tenant's", "t2", []*approval.Standing{st[2]}},
		{"every tenant's", "", []*approval.Standing{st[3], st[2], st[1], st[0]}},
		{"a tenant with none", "t9", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Standings(t.Context(), tt.tenant)
			if err != nil {
				t.Fatalf("Standings(%q): %v", tt.tenant, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("Standings(%q) mismatch (-want +got):\n%s", tt.tenant, diff)
			}
		})
	}
}

func testStandingRevoke(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	st := addStandings(t, s)
	const comment = "mcp__github__github_comment"
	find := func(tenant, digest string) error {
		_, err := s.FindStanding(ctx, tenant, comment, digest)
		return err
	}

	steps := []struct {
		name       string
		tenant, id string
		wantErr    error
	}{
		{"another tenant cannot revoke", "t2", "st1", approval.ErrNotFound},
		{"unknown id", "t1", "st-404", approval.ErrNotFound},
		{"unknown id in any tenant", "", "st-404", approval.ErrNotFound},
		{"own tenant revokes", "t1", "st1", nil},
		{"revoking twice", "t1", "st1", approval.ErrNotFound},
		{"revoking twice in any tenant", "", "st1", approval.ErrNotFound},
		{"any tenant revokes", "", "st3", nil},
	}
	for i, tt := range steps {
		err := s.RevokeStanding(ctx, tt.tenant, tt.id, at(time.Hour+time.Duration(i)*time.Second))
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: RevokeStanding(%q, %q) error = %v, want %v", tt.name, tt.tenant, tt.id, err, tt.wantErr)
		}
	}
	for _, c := range []struct{ tenant, digest string }{{"t1", "sha256:d1"}, {"t2", "sha256:d1"}} {
		if err := find(c.tenant, c.digest); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("FindStanding(%s, %s) after revoking = %v, want ErrNotFound", c.tenant, c.digest, err)
		}
	}
	if err := find("t1", "sha256:d2"); err != nil {
		t.Errorf("an unrevoked standing approval is no longer found: %v", err)
	}

	// the revocation is recorded at its time; the rest of the record is kept
	list, err := s.Standings(ctx, "")
	if err != nil {
		t.Fatalf("Standings: %v", err)
	}
	st[0].Revoked = at(time.Hour + 3*time.Second)
	st[2].Revoked = at(time.Hour + 6*time.Second)
	want := []*approval.Standing{st[3], st[2], st[1], st[0]}
	if diff := cmp.Diff(want, list, cmpOpts...); diff != "" {
		t.Errorf("Standings after revoking (-want +got):\n%s", diff)
	}

	// the same call can be allowed again with a new standing approval
	again := &approval.Standing{ID: "st5", Tenant: "t1", Tool: comment, Digest: "sha256:d1",
		CardID: "card-st5", Approver: "carol", Created: at(2 * time.Hour)}
	if err := s.AddStanding(ctx, again); err != nil {
		t.Fatalf("AddStanding: %v", err)
	}
	got, err := s.FindStanding(ctx, "t1", comment, "sha256:d1")
	if err != nil {
		t.Fatalf("FindStanding after a new approval: %v", err)
	}
	if diff := cmp.Diff(again, got, cmpOpts...); diff != "" {
		t.Errorf("FindStanding after a new approval (-want +got):\n%s", diff)
	}
}
