package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store/sqlite"
)

// A token revoked through the store the REST API is given (revokeThrough) is refused by the
// gateway at once, though the gateway trusts a token it looked up for tokenTTL.
func TestRevokeThroughTheServersStoreReachesTheGateway(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	st, err := newStack(p, db, filepath.Join(dir, "ws"), &sandboxState{}, slog.New(slog.NewTextHandler(io.Discard, nil)), "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	tok := &auth.Token{ID: newTokenID(), Hash: hash, Role: auth.RoleAgent, Tenant: "default", SessionRole: "person",
		Created: time.Now()}
	if err := db.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	initialize := func() int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		st.gateway.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	if code := initialize(); code != http.StatusOK {
		t.Fatalf("a good token: HTTP %d", code)
	}
	if err := (revokeThrough{appStore: db, gw: st.gateway}).RevokeToken(t.Context(), tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if code := initialize(); code != http.StatusUnauthorized {
		t.Errorf("a token revoked through the server's store: HTTP %d, want 401", code)
	}
}
