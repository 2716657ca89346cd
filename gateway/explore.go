package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/surface"
)

var _ server.Explorer = (*Gateway)(nil)

// Surface computes the surface q describes under the policy in force, with q.Env standing in
// for the host environment's variables it names (server.Explorer).
func (g *Gateway) Surface(_ context.Context, q server.SurfaceQuery) (*server.SurfaceReport, error) {
	snap := g.snapshot.Load()
	env := snap.env
	if len(q.Env) > 0 {
		env = snap.p.Env(func(k string) (string, bool) {
			if v, ok := q.Env[k]; ok {
				return v, true
			}
			return os.LookupEnv(k)
		})
	}
	tenant, err := exploredTenant(snap.p, q.Tenant)
	if err != nil {
		return nil, err
	}
	if q.Role == "" {
		return nil, errors.New("role is required: " + roleList(snap.p))
	}
	sf, err := surface.Open(env, surface.Spec{Tenant: tenant, Role: q.Role, Profile: q.Profile, Harness: q.Harness, Model: q.Model, Owner: q.Owner})
	if err != nil {
		return nil, err
	}
	rep := &server.SurfaceReport{Report: surface.NewReport(sf, env), Given: []surface.ReportTool{}}
	for _, name := range rep.Tools {
		e := sf.Explain(name)
		rep.Given = append(rep.Given, surface.ReportTool{Tool: name, Reason: e.Reason})
	}
	return rep, nil
}

// Review reviews one call as a session of q's tenant, role and profile would make it, with
// the tenant's hard blocks in force (server.Explorer). Nothing runs.
func (g *Gateway) Review(_ context.Context, q server.ReviewQuery) (*review.Verdict, error) {
	snap := g.snapshot.Load()
	tenant, err := exploredTenant(snap.p, q.Tenant)
	if err != nil {
		return nil, err
	}
	if q.Role == "" {
		return nil, errors.New("role is required: " + roleList(snap.p))
	}
	sf, err := surface.Open(snap.env, surface.Spec{Tenant: tenant, Role: q.Role, Profile: q.Profile, Model: q.Model})
	if err != nil {
		return nil, err
	}
	ws := q.Workspace
	switch {
	case ws == "":
		if ws, err = g.workspace(tenant); err != nil {
			return nil, err
		}
	case !filepath.IsAbs(ws):
		return nil, fmt.Errorf("workspace %q: want an absolute path", ws)
	}
	paths, err := action.NewResolver(ws, ws)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", ws, err)
	}
	rs := &review.Session{ID: "explore", Surface: sf, Paths: paths}
	if g.rules != nil {
		rs.Boundaries = g.rules(tenant)
		rs.Enforced = !g.o.Native.Sandbox.Off // as the gateway's sessions are (reviewSession)
	}
	v := g.o.Reviewer.Review(rs, q.Tool, q.Input)
	return &v, nil
}

// exploredTenant is the tenant a query names, or the policy's only one (or default).
func exploredTenant(p *policy.Policy, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	var ids []string
	for t := range p.Tenants() {
		ids = append(ids, t.ID)
	}
	switch {
	case len(ids) == 1:
		return ids[0], nil
	case slices.Contains(ids, "default"):
		return "default", nil
	}
	return "", fmt.Errorf("tenant is required: the policy has %v", ids)
}

// roleList names the policy's roles, for a message.
func roleList(p *policy.Policy) string {
	var ids []string
	for r := range p.Roles() {
		ids = append(ids, r.ID)
	}
	return fmt.Sprintf("the policy has %v", ids)
}
