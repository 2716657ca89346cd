package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/server"
)

// actAs serves a request in process, acting as the token with the id, with a bearer header
// when secret is not "".
func actAs(h http.Handler, id, secret, path string) (int, map[string]any) {
	req := httptest.NewRequestWithContext(server.ActAs(context.Background(), id), "GET", path, nil)
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

// TestActAs: a request in process acts as the stored token by its id, read again each time:
// its role is the API's rule, and a revoked, expired or unknown token is refused as its secret
// would be; the request's Authorization header counts for nothing.
func TestActAs(t *testing.T) {
	f := newFixture(t)
	h := server.New(server.Options{Store: f.db, Broker: f.broker})
	if code, who := actAs(h, "tok-acme-viewer", "", "/api/v1/whoami"); code != http.StatusOK || who["id"] != "tok-acme-viewer" || who["access"] != auth.RoleViewer {
		t.Errorf("whoami as tok-acme-viewer: %d %v", code, who)
	}
	// The admin's secret beside it changes nothing: the viewer may not list tokens.
	if code, _ := actAs(h, "tok-acme-viewer", f.tokens["admin"], "/api/v1/tokens"); code != http.StatusForbidden {
		t.Errorf("tokens as a viewer, with an admin's secret in the header: %d; want 403", code)
	}
	if err := f.db.CreateToken(context.Background(), &auth.Token{ID: "tok-brief", Hash: auth.Hash("wdn_brief"), Role: auth.RoleAdmin,
		Created: time.Now(), Expires: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.RevokeToken(context.Background(), "tok-acme-approver", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"tok-acme-approver", "tok-brief", "tok-unknown", ""} {
		if code, _ := actAs(h, id, f.tokens["admin"], "/api/v1/whoami"); code != http.StatusUnauthorized {
			t.Errorf("whoami as %q (revoked, expired or unknown): %d; want 401", id, code)
		}
	}
	// A store that cannot find tokens by id refuses every such request.
	blind := server.New(server.Options{Store: hashOnly{f.db}, Broker: approval.NewBroker(approval.Options{Store: f.db})})
	if code, _ := actAs(blind, "tok-admin", "", "/api/v1/whoami"); code != http.StatusServiceUnavailable {
		t.Errorf("whoami by id on a store without TokenByID: %d; want 503", code)
	}
	// Over HTTP nothing but a bearer secret is a token.
	if code, _, _ := f.do("GET", "/api/v1/whoami", "", ""); code != http.StatusUnauthorized {
		t.Errorf("whoami over HTTP without a secret: %d; want 401", code)
	}
}

// hashOnly is a store that finds tokens only by their secret's hash.
type hashOnly struct{ server.Store }
