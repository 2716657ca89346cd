package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/server"
)

// warden token list shows every token but never a secret or its hash; revoke revokes by ID.
func TestTokenListAndRevoke(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	out, _, code := run(t, "token", "create", "--db", db, "--create", "--tenant", "default", "--role", "person", "--name", "ci agent")
	if code != 0 {
		t.Fatalf("create: status %d: %s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	secret := lines[len(lines)-1]
	t.Setenv("WARDEN_DB", db) // the rest reach the store through the environment
	out, _, code = run(t, "token", "list", "--json")
	if code != 0 {
		t.Fatalf("list: status %d: %s", code, out)
	}
	if strings.Contains(out, secret) || strings.Contains(out, "hash") {
		t.Errorf("list shows a secret or hash: %s", out)
	}
	var list struct{ Tokens []server.TokenJSON }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tokens) != 1 {
		t.Fatalf("list --json: %v: %s", err, out)
	}
	tok := list.Tokens[0]
	if tok.Name != "ci agent" || tok.Access != "agent" || tok.Tenant != "default" || tok.Role != "person" || tok.Revoked != nil {
		t.Errorf("listed %+v", tok)
	}
	if out, _, code = run(t, "token", "revoke", tok.ID); code != 0 || !strings.Contains(out, "revoked token "+tok.ID) {
		t.Errorf("revoke: status %d: %s", code, out)
	}
	out, _, _ = run(t, "token", "list")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "ID") || !strings.Contains(rows[0], "REVOKED") ||
		!strings.HasPrefix(rows[1], tok.ID) || strings.HasSuffix(rows[1], "-") {
		t.Errorf("list after the revocation (want its revocation time last): %s", out)
	}
	if _, errOut, code := run(t, "token", "revoke", tok.ID); code != 1 || !strings.Contains(errOut, "no such token, or it is revoked already") {
		t.Errorf("revoking it again: status %d: %s", code, errOut)
	}
	if _, errOut, code := run(t, "token", "list", "--postgres-schema", "x"); code != 2 || !strings.Contains(errOut, "--postgres") {
		t.Errorf("--postgres-schema without --postgres: status %d: %s", code, errOut)
	}
}

// The REST token routes: an admin creates (the secret once), lists and revokes; an operator
// only its own tenant's; a revocation ends the token's live session at once.
func TestTokenRoutes(t *testing.T) {
	s := serveForTest(t)
	do := func(method, path, secret, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, s.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, created := do("POST", "/api/v1/tokens", s.admin, `{"access":"agent","tenant":"default","role":"person","name":"via api"}`)
	if code != http.StatusCreated || created["secret"] == "" || created["id"] == "" {
		t.Fatalf("POST /api/v1/tokens: %d %v", code, created)
	}
	agent := created["secret"].(string)
	if code, body := do("POST", "/api/v1/tokens", s.admin, `{"access":"agent","tenant":"default","role":"nobody"}`); code != 400 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "no such role") {
		t.Errorf("a token for a role the policy lacks: %d %v", code, body)
	}
	code, body := do("POST", "/api/v1/tokens", s.admin, `{"access":"operator","tenant":"default","name":"op"}`)
	if code != http.StatusCreated {
		t.Fatalf("an operator token: %d %v", code, body)
	}
	op := body["secret"].(string)
	if code, _ := do("POST", "/api/v1/tokens", op, `{"access":"admin"}`); code != http.StatusForbidden {
		t.Errorf("an operator creating an admin token: %d, want 403", code)
	}
	if code, _ := do("GET", "/api/v1/tokens", s.agent, ""); code != http.StatusForbidden {
		t.Errorf("an agent token listing tokens: %d, want 403", code)
	}
	code, body = do("GET", "/api/v1/tokens", op, "")
	if code != 200 {
		t.Fatalf("GET /api/v1/tokens as operator: %d", code)
	}
	for _, tk := range body["tokens"].([]any) {
		m := tk.(map[string]any)
		if m["tenant"] != "default" || m["secret"] != nil || m["hash"] != nil {
			t.Errorf("an operator sees %v", m)
		}
	}
	// An admin token does not exist for an operator.
	var adminID string
	_, body = do("GET", "/api/v1/tokens", s.admin, "")
	for _, tk := range body["tokens"].([]any) {
		if m := tk.(map[string]any); m["access"] == "admin" {
			adminID = m["id"].(string)
		}
	}
	if code, _ := do("DELETE", "/api/v1/tokens/"+adminID, op, ""); code != http.StatusNotFound {
		t.Errorf("an operator revoking the admin token: %d, want 404", code)
	}

	cs := s.connect(t, agent)
	defer cs.Close()
	if len(s.st.gateway.LiveSessions()) == 0 {
		t.Fatal("no live session")
	}
	if code, _ := do("DELETE", "/api/v1/tokens/"+created["id"].(string), op, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE as the tenant's operator: %d", code)
	}
	if n := s.st.gateway.LiveSessions()["default"]; n != 0 {
		t.Errorf("%d sessions of the revoked token still live after DELETE returned", n)
	}
	if code, body := do("DELETE", "/api/v1/tokens/"+created["id"].(string), s.admin, ""); code != http.StatusNotFound || body["error"] == nil {
		t.Errorf("DELETE again: %d %v, want a JSON 404", code, body)
	}
}
