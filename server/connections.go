package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/policy"
)

// getConnection answers one connection, selected as a call selects one (S8): by its exact id,
// or by a display name that exactly one of the tenant's connections has, in any case.
func (s *Server) getConnection(w http.ResponseWriter, r *http.Request) {
	if tenant, ok := s.dataTenant(w, r); ok {
		if it, ok := s.selectConnection(w, r, tenant, r.PathValue("id")); ok {
			writeItem(w, http.StatusOK, it)
		}
	}
}

// selectConnection finds a tenant's connection by id or unique name. An ambiguous name
// selects nothing (409, naming the tenant's connections that share it): never a guess.
func (s *Server) selectConnection(w http.ResponseWriter, r *http.Request, tenant, sel string) (*manage.Item, bool) {
	ctx := r.Context()
	it, err := s.o.Data.Get(ctx, manage.KindConnection, sel)
	switch {
	case err == nil && it.Tenant == tenant:
		return it, true
	case err != nil && !errors.Is(err, manage.ErrNotFound):
		s.readFailed(w, r, manage.KindConnection, sel, err)
		return nil, false
	}
	var found []*manage.Item
	for after := ""; ; {
		items, next, err := s.o.Data.List(ctx, manage.KindConnection, tenant, after, 1000)
		if err != nil {
			s.readFailed(w, r, manage.KindConnection, sel, err)
			return nil, false
		}
		for _, it := range items {
			var c struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(it.Data, &c) == nil && c.Name != "" && strings.EqualFold(c.Name, sel) {
				found = append(found, it)
			}
		}
		if next == "" || len(items) == 0 {
			break
		}
		after = next
	}
	switch len(found) {
	case 0:
		s.readFailed(w, r, manage.KindConnection, sel, manage.ErrNotFound)
		return nil, false
	case 1:
		return found[0], true
	}
	ids := make([]string, len(found))
	for i, it := range found {
		ids[i] = it.ID
	}
	s.fail(w, r, apiError{http.StatusConflict, "ambiguous", fmt.Sprintf("the name %q is ambiguous in tenant %s: connections %s have it; select by id",
		sel, tenant, strings.Join(ids, ", "))}, nil)
	return nil, false
}

// toolJSON is one tool of a connection's connector, as discovery shows it.
type toolJSON struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Effect      string `json:"effect,omitempty"`
	// Grantable: a grant of the connector gives it (the read table).
	Grantable bool `json:"grantable"`
	// Granted is whether the profile asked about is given the tool (absent without one), and
	// Why says why or why not.
	Granted *bool  `json:"granted,omitempty"`
	Why     string `json:"why,omitempty"`
}

// connectionTools answers discovery (S8): the catalog of a connection's connector, and with
// ?profile whether that profile's grant gives each tool.
func (s *Server) connectionTools(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.dataTenant(w, r)
	if !ok {
		return
	}
	conn, ok := s.selectConnection(w, r, tenant, r.PathValue("id"))
	if !ok {
		return
	}
	p := s.o.Data.Policy()
	var c struct {
		Connector string `json:"connector"`
	}
	_ = json.Unmarshal(conn.Data, &c)
	srv, known := p.Server(c.Connector)
	if !known || srv.Kind != policy.KindConnector {
		s.fail(w, r, apiError{http.StatusConflict, "unknown_connector", fmt.Sprintf("connection %s names connector %q, which the policy in force does not declare", conn.ID, c.Connector)}, nil)
		return
	}
	var prof *policy.Profile
	if name := r.URL.Query().Get("profile"); name != "" {
		if prof, ok = s.tenantProfile(w, r, p, tenant, name); !ok {
			return
		}
	}
	tools := []toolJSON{}
	for t := range p.Tools() {
		if t.Server != srv {
			continue
		}
		tj := toolJSON{Name: t.Name, Description: t.Description, Effect: string(t.Effect), Grantable: t.Grantable}
		if prof != nil {
			granted, why := prof.GrantFor(t)
			tj.Granted, tj.Why = &granted, why
		}
		tools = append(tools, tj)
	}
	body := map[string]any{"connection": conn.ID, "connector": srv.ID, "tools": tools}
	if prof != nil {
		body["profile"] = prof.ID
	}
	writeJSON(w, http.StatusOK, body)
}

// tenantProfile returns a profile of the tenant as the policy in force compiled it, or answers
// 404 (another tenant's, or none) or 409 (stored, but refused by the policy in force).
func (s *Server) tenantProfile(w http.ResponseWriter, r *http.Request, p *policy.Policy, tenant, id string) (*policy.Profile, bool) {
	prof, compiled := p.Profile(id)
	if t, ok := p.Tenant(tenant); ok && compiled {
		for _, cw := range t.Coworkers {
			if cw == prof {
				return prof, true
			}
		}
	}
	it, ok := s.object(w, r, manage.KindProfile, tenant, id)
	if !ok {
		return nil, false
	}
	if !compiled {
		s.fail(w, r, apiError{http.StatusConflict, "refused", fmt.Sprintf("profile %s is stored but the policy in force leaves it out: %s", id, it.Problem)}, nil)
		return nil, false
	}
	return prof, true
}
