package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/auth"
)

// The token routes: GET /api/v1/tokens lists tokens (never a secret or its hash), POST
// creates one and returns its secret once, DELETE /api/v1/tokens/{id} revokes one. An admin
// manages every token; an operator manages its own tenant's, and may not create admin
// tokens (an admin token is for every tenant). A revocation goes through Options.Store's
// RevokeToken: `warden serve` passes one that reaches every instance's sessions at once.

// TokenJSON is a token as the API and `warden token list --json` show it: everything but the
// secret's hash.
type TokenJSON struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Access  string `json:"access"`
	Tenant  string `json:"tenant,omitempty"`
	Role    string `json:"role,omitempty"`
	Profile string `json:"profile,omitempty"`
	// Model and Harness are what an agent token binds its sessions to run on; absent, the
	// client states them at initialize.
	Model   string     `json:"model,omitempty"`
	Harness string     `json:"harness,omitempty"`
	Created time.Time  `json:"created"`
	Revoked *time.Time `json:"revoked,omitempty"`
	// Expires is when the token stops being good; absent, never.
	Expires *time.Time `json:"expires,omitempty"`
	// Secret is set once, in the answer to the POST that created the token.
	Secret string `json:"secret,omitempty"`
}

// ToTokenJSON is a token as the API shows it.
func ToTokenJSON(t *auth.Token) TokenJSON {
	j := TokenJSON{ID: t.ID, Name: t.Name, Access: t.Role, Tenant: t.Tenant, Role: t.SessionRole, Profile: t.Profile,
		Model: t.Model, Harness: t.Harness, Created: t.Created}
	if !t.Revoked.IsZero() {
		r := t.Revoked
		j.Revoked = &r
	}
	if !t.Expires.IsZero() {
		e := t.Expires
		j.Expires = &e
	}
	return j
}

// tokenRoutes are who may use the token routes.
var tokenRoutes = []string{auth.RoleAdmin, auth.RoleOperator}

// whoami answers with the token the request came with (never its secret): what it may do and
// for which tenant, so that a client (the console's sign-in) need not be told.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ToTokenJSON(caller(r)))
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	list, err := s.o.Store.Tokens(r.Context())
	if err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the tokens cannot be read right now"}, err)
		return
	}
	tenant := tenantOf(caller(r))
	out := []TokenJSON{}
	for _, t := range list {
		if tenant == "" || t.Tenant == tenant {
			out = append(out, ToTokenJSON(t))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Access  string `json:"access"`
		Tenant  string `json:"tenant"`
		Role    string `json:"role"`
		Profile string `json:"profile"`
		Model   string `json:"model"`
		Harness string `json:"harness"`
		Name    string `json:"name"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request",
			`the body must be {"access": "agent" | "admin" | "operator" | "approver" | "viewer", "tenant", "role", "profile", "model", "harness", "name"}: ` + err.Error()}, nil)
		return
	}
	if body.Access == "" {
		body.Access = auth.RoleAgent
	}
	bad := func(msg string) {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", msg}, nil)
	}
	if !slices.Contains(auth.Roles, body.Access) {
		bad(fmt.Sprintf("access %q: want one of %s", body.Access, strings.Join(auth.Roles, ", ")))
		return
	}
	who := caller(r)
	if mine := tenantOf(who); mine != "" {
		switch {
		case body.Access == auth.RoleAdmin:
			s.fail(w, r, apiError{http.StatusForbidden, "forbidden", "an operator token may not create admin tokens"}, nil)
			return
		case body.Tenant == "":
			body.Tenant = mine
		case body.Tenant != mine:
			s.fail(w, r, apiError{http.StatusForbidden, "forbidden", "an operator token creates tokens for its own tenant only"}, nil)
			return
		}
	}
	t := &auth.Token{ID: auth.NewID(), Role: body.Access, Tenant: body.Tenant, SessionRole: body.Role, Profile: body.Profile,
		Model: body.Model, Harness: body.Harness, Name: body.Name, Created: time.Now().UTC()}
	switch {
	case t.Role == auth.RoleAdmin && (t.Tenant != "" || t.SessionRole != "" || t.Profile != "" || t.Model != "" || t.Harness != ""):
		bad("an admin token is for every tenant: leave out tenant, role, profile, model and harness")
		return
	case t.Role != auth.RoleAdmin && t.Tenant == "":
		bad(auth.A(t.Role) + " token needs a tenant")
		return
	case t.Role != auth.RoleAgent && (t.SessionRole != "" || t.Profile != "" || t.Model != "" || t.Harness != ""):
		bad("role, profile, model and harness are for agent tokens only")
		return
	}
	if s.o.ValidateToken != nil {
		if err := s.o.ValidateToken(t); err != nil {
			bad(err.Error())
			return
		}
	} else if t.Role == auth.RoleAgent {
		// Nothing can check the session role and profile: refuse rather than store a token
		// that may not open a session as it says.
		s.fail(w, r, apiError{http.StatusNotImplemented, "unsupported", "this server cannot check agent tokens against a policy; use warden token create"}, nil)
		return
	}
	secret, hash, err := auth.NewSecret()
	if err != nil {
		s.fail(w, r, apiError{http.StatusInternalServerError, "internal", "no secret could be made"}, err)
		return
	}
	t.Hash = hash
	if err := s.o.Store.CreateToken(r.Context(), t); err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the token could not be stored"}, err)
		return
	}
	out := ToTokenJSON(t)
	out.Secret = secret
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if tenant := tenantOf(caller(r)); tenant != "" {
		// Another tenant's token, or an admin's, does not exist for an operator.
		list, err := s.o.Store.Tokens(r.Context())
		if err != nil {
			s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the tokens cannot be read right now"}, err)
			return
		}
		if !slices.ContainsFunc(list, func(t *auth.Token) bool { return t.ID == id && t.Tenant == tenant }) {
			s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such token"}, nil)
			return
		}
	}
	err := s.o.Store.RevokeToken(r.Context(), id, time.Now())
	switch {
	case errors.Is(err, auth.ErrNotFound):
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such token, or it is revoked already"}, nil)
	case err != nil:
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the token could not be revoked"}, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
