package main

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/store/sqlite"
)

// The person token warden serve prints for its banner expires after --client-token-ttl, and
// the banner says when and how to reach the approvals API. A token past its expiry is refused
// by the gateway and the API as a revoked one is. Before, each start minted a token that never
// expired.
func TestBannerTokenExpires(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	before := time.Now()
	s := startServe(t, "--db", db, "--workspaces", filepath.Join(t.TempDir(), "ws"), "--client-token=true", "--client-token-ttl", "90m")
	bearer := regexp.MustCompile(`Bearer (wdn_\S+)`)
	var m []string
	for deadline := time.Now().Add(time.Minute); m == nil; m = bearer.FindStringSubmatch(s.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no client token printed:\n%s", s.out.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the output, which follows the listening line
	}
	after := time.Now()
	out := s.out.String()
	for _, want := range []string{"it expires in 1h30m0s, at ", "--client-token-ttl sets how long",
		"GET " + s.base + "/api/v1/approvals lists the approval cards", "POST /api/v1/approvals/{id} answers one"} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner lacks %q:\n%s", want, out)
		}
	}
	if code, body := s.initialize(t, m[1]); code != http.StatusOK {
		t.Fatalf("initialize with the banner's token: %d %s", code, body)
	}

	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tok, err := store.TokenByHash(context.Background(), auth.Hash(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := before.Add(90*time.Minute), after.Add(90*time.Minute); tok.Expires.Before(lo.Add(-time.Second)) || tok.Expires.After(hi) {
		t.Errorf("the banner's token expires at %v, want 90m after the start (%v to %v)", tok.Expires, lo, hi)
	}

	// Tokens past their expiry, an agent's and an approver's: refused at /mcp and /api alike.
	mint := func(role, sessionRole string, expires time.Time) string {
		secret, hash, err := auth.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		if err := store.CreateToken(context.Background(), &auth.Token{Hash: hash, Role: role, Tenant: "default",
			SessionRole: sessionRole, Created: time.Now().Add(-2 * time.Hour), Expires: expires}); err != nil {
			t.Fatal(err)
		}
		return secret
	}
	past := time.Now().Add(-time.Hour)
	if code, body := s.initialize(t, mint(auth.RoleAgent, "person", past)); code != http.StatusUnauthorized {
		t.Errorf("initialize with an expired agent token: %d %s, want 401", code, body)
	}
	api := func(secret string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, s.base+"/api/v1/approvals", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	if code, body := api(mint(auth.RoleApprover, "", past)); code != http.StatusUnauthorized || !strings.Contains(body, `"unauthenticated"`) {
		t.Errorf("the approvals API with an expired approver token: %d %s, want 401 unauthenticated", code, body)
	}
	if code, body := api(mint(auth.RoleApprover, "", time.Now().Add(time.Hour))); code != http.StatusOK {
		t.Errorf("the approvals API with an approver token not yet expired: %d %s, want 200", code, body)
	}
}

// A banner token that never expires is what --client-token-ttl ends: 0 is refused.
func TestClientTokenTTLRefusesZero(t *testing.T) {
	_, stderr, code := run(t, "serve", "--db", newStoreFile(t), "--client-token-ttl", "0s")
	if code != 2 || !strings.Contains(stderr, "--client-token-ttl 0s: want a lifetime above 0") {
		t.Errorf("status %d: %s", code, stderr)
	}
}
