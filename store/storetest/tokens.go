package storetest

import (
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/auth"
)

func testTokens(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	tokens := []*auth.Token{
		{ID: "tok-admin", Hash: auth.Hash("wdn_admin"), Role: auth.RoleAdmin, Name: "first start", Created: t0},
		{ID: "tok-approver", Hash: auth.Hash("wdn_approver"), Role: auth.RoleApprover, Tenant: "t1", Name: "alice", Created: at(time.Second)},
		{ID: "tok-agent", Hash: auth.Hash("wdn_agent"), Role: auth.RoleAgent, Tenant: "t1", SessionRole: "coworker",
			Profile: "seo-specialist", Name: "coworker 7", Created: at(2 * time.Second)},
		// binds the model and the harness its sessions run on
		{ID: "tok-route", Hash: auth.Hash("wdn_route"), Role: auth.RoleAgent, Tenant: "t1", SessionRole: "person",
			Model: "google/gemini-3.8-flash", Harness: "loop", Name: "loop chat", Created: at(2500 * time.Millisecond)},
		// expires in a year from now: good, and its expiry round-trips to the microsecond
		{ID: "tok-banner", Hash: auth.Hash("wdn_banner"), Role: auth.RoleAgent, Tenant: "default", SessionRole: "person",
			Name: "banner", Created: at(3 * time.Second), Expires: time.Now().Add(365 * 24 * time.Hour).UTC().Truncate(time.Microsecond)},
	}
	for _, tok := range tokens {
		if err := s.CreateToken(ctx, tok); err != nil {
			t.Fatalf("CreateToken(%s): %v", tok.ID, err)
		}
	}
	for _, want := range tokens {
		got, err := s.TokenByHash(ctx, want.Hash)
		if err != nil {
			t.Fatalf("TokenByHash(%s): %v", want.ID, err)
		}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("TokenByHash(%s) (-want +got):\n%s", want.ID, diff)
		}
	}
	for _, want := range tokens {
		got, err := s.TokenByID(ctx, want.ID)
		if err != nil {
			t.Fatalf("TokenByID(%s): %v", want.ID, err)
		}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("TokenByID(%s) (-want +got):\n%s", want.ID, diff)
		}
	}
	for _, id := range []string{"tok-unknown", "", "tok-adm"} {
		if _, err := s.TokenByID(ctx, id); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("TokenByID(%q) = %v, want ErrNotFound", id, err)
		}
	}
	for _, hash := range []string{auth.Hash("wdn_unknown"), "", auth.Hash("wdn_admin")[:10]} {
		if _, err := s.TokenByHash(ctx, hash); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("TokenByHash(%q) = %v, want ErrNotFound", hash, err)
		}
	}

	if err := s.RevokeToken(ctx, "tok-approver", at(time.Hour)); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	tokens[1].Revoked = at(time.Hour)
	if _, err := s.TokenByHash(ctx, tokens[1].Hash); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("TokenByHash of a revoked token = %v, want ErrNotFound", err)
	}
	if _, err := s.TokenByID(ctx, "tok-approver"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("TokenByID of a revoked token = %v, want ErrNotFound", err)
	}
	if _, err := s.TokenByHash(ctx, tokens[2].Hash); err != nil {
		t.Errorf("another token stopped working: %v", err)
	}
	// an expired token is refused as a revoked one is, and still listed
	expired := &auth.Token{ID: "tok-expired", Hash: auth.Hash("wdn_expired"), Role: auth.RoleAgent, Tenant: "default",
		SessionRole: "person", Created: at(4 * time.Second), Expires: at(5 * time.Second)}
	if err := s.CreateToken(ctx, expired); err != nil {
		t.Fatalf("CreateToken(expired): %v", err)
	}
	tokens = append(tokens, expired)
	if _, err := s.TokenByHash(ctx, expired.Hash); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("TokenByHash of an expired token = %v, want ErrNotFound", err)
	}
	if _, err := s.TokenByID(ctx, expired.ID); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("TokenByID of an expired token = %v, want ErrNotFound", err)
	}
	// the suite's reading: revoking a token that does not exist is ErrNotFound
	if err := s.RevokeToken(ctx, "tok-404", at(time.Hour)); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("RevokeToken(unknown) = %v, want ErrNotFound", err)
	}

	got, err := s.Tokens(ctx)
	if err != nil {
		t.Fatalf("Tokens: %v", err)
	}
	// Tokens promises no order
	sort.Slice(got, func(i, j int) bool { return got[i].Created.Before(got[j].Created) })
	if diff := cmp.Diff(tokens, got, cmpOpts...); diff != "" {
		t.Errorf("Tokens, the revoked one included (-want +got):\n%s", diff)
	}
}
