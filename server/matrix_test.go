package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
)

// matrixRuns holds one live run per tenant: run-<tenant>, of no profile.
type matrixRuns struct{}

func (matrixRuns) RunUsage(_ context.Context, id string, u gate.Usage, may func(tenant, profile, token string) bool) (*gate.Standing, error) {
	tenant, ok := strings.CutPrefix(id, "run-")
	if !ok || !may(tenant, "", "") {
		return nil, budget.ErrNotFound
	}
	return &gate.Standing{Run: id, Tenant: tenant, Turns: u.Turns, MaxTurns: 100, Month: "2026-12", Recorded: u}, nil
}

// matrixReq is one request of the matrix.
type matrixReq struct {
	method, path, body string
	headers            []string
	// stream: the answer is an event stream; its status and first bytes are what is checked.
	stream bool
}

// matrixCase makes a route's request at an object of a tenant, with what it needs made first
// (by an admin), fresh for each request.
type matrixCase struct {
	build func(f *fixture, tenant string, n int) matrixReq
	// other is the status of a request at another tenant's object by a role that may use the
	// route (404 when 0); a list that cannot name another tenant answers 200 without any of it.
	other int
}

// The roles of H1 for the management routes: admin everything; operator reads and writes its
// tenant's connections, profiles, grants and egress, not tenants; approver and viewer read;
// agent nothing.
var managementRoles = map[string][]string{
	"GET /api/v1/tenants":                                 {"admin", "operator", "approver", "viewer"},
	"POST /api/v1/tenants":                                {"admin"},
	"GET /api/v1/tenants/{tenant}":                        {"admin", "operator", "approver", "viewer"},
	"PUT /api/v1/tenants/{tenant}":                        {"admin"},
	"DELETE /api/v1/tenants/{tenant}":                     {"admin"},
	"GET /api/v1/tenants/{tenant}/connections":            {"admin", "operator", "approver", "viewer"},
	"POST /api/v1/tenants/{tenant}/connections":           {"admin", "operator"},
	"GET /api/v1/tenants/{tenant}/connections/{id}":       {"admin", "operator", "approver", "viewer"},
	"PUT /api/v1/tenants/{tenant}/connections/{id}":       {"admin", "operator"},
	"DELETE /api/v1/tenants/{tenant}/connections/{id}":    {"admin", "operator"},
	"GET /api/v1/tenants/{tenant}/connections/{id}/tools": {"admin", "operator", "approver", "viewer"},
	"GET /api/v1/tenants/{tenant}/profiles":               {"admin", "operator", "approver", "viewer"},
	"POST /api/v1/tenants/{tenant}/profiles":              {"admin", "operator"},
	"GET /api/v1/tenants/{tenant}/profiles/{id}":          {"admin", "operator", "approver", "viewer"},
	"PUT /api/v1/tenants/{tenant}/profiles/{id}":          {"admin", "operator"},
	"DELETE /api/v1/tenants/{tenant}/profiles/{id}":       {"admin", "operator"},
	"GET /api/v1/tenants/{tenant}/profiles/{id}/grant":    {"admin", "operator", "approver", "viewer"},
	"PUT /api/v1/tenants/{tenant}/profiles/{id}/grant":    {"admin", "operator"},
	"GET /api/v1/tenants/{tenant}/allowances":             {"admin", "operator", "approver", "viewer"},
	"GET /api/v1/tenants/{tenant}/egress":                 {"admin", "operator", "approver", "viewer"},
	"PUT /api/v1/tenants/{tenant}/egress":                 {"admin", "operator"},
}

// seed writes an object as the admin, for a request of the matrix to act on.
func (f *fixture) seed(path, body string) {
	f.t.Helper()
	if code, _, raw := f.request("PUT", path, "admin", body, "If-Match", `"0"`); code != http.StatusCreated {
		f.t.Fatalf("seed %s: %d %s", path, code, raw)
	}
}

func seedConnection(f *fixture, tenant string, n int) string {
	id := fmt.Sprintf("%s-conn-%d", tenant, n)
	f.seed("/api/v1/tenants/"+tenant+"/connections/"+id, fmt.Sprintf(`{"id":%q,"connector":"shop","name":"Store %d","enabled":false}`, id, n))
	return "/api/v1/tenants/" + tenant + "/connections/" + id
}

func seedProfile(f *fixture, tenant string, n int) string {
	id := fmt.Sprintf("%s-prof-%d", tenant, n)
	f.seed("/api/v1/tenants/"+tenant+"/profiles/"+id, fmt.Sprintf(`{"id":%q,"role":"specialist","tools":["mcp__shop__list"],"grant":{"connectors":["shop"]}}`, id))
	return "/api/v1/tenants/" + tenant + "/profiles/" + id
}

var anyRevision = []string{"If-Match", "*"}

var matrixCases = map[string]matrixCase{
	"GET /api/v1/approvals": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/approvals?tenant=" + t}
	}, other: 200},
	"GET /api/v1/approvals/standing": {build: func(_ *fixture, _ string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/approvals/standing"}
	}, other: 200},
	"DELETE /api/v1/approvals/standing/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		id := fmt.Sprintf("st-%s-%d", t, n)
		if err := f.db.AddStanding(context.Background(), &approval.Standing{ID: id, Tenant: t, Tool: "mcp__shop__order", Digest: "d-" + id, Created: time.Now()}); err != nil {
			f.t.Fatal(err)
		}
		return matrixReq{method: "DELETE", path: "/api/v1/approvals/standing/" + id}
	}},
	"GET /api/v1/approvals/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/approvals/" + f.card(t, fmt.Sprintf("card-%s-%d", t, n)).ID}
	}},
	"POST /api/v1/approvals/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/approvals/" + f.card(t, fmt.Sprintf("card-%s-%d", t, n)).ID, body: `{"answer":"deny"}`}
	}},
	"GET /api/v1/audit": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/audit?tenant=" + t}
	}, other: 200},
	"GET /api/v1/audit/keys": {build: func(_ *fixture, _ string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/audit/keys"}
	}, other: 200},
	"GET /api/v1/tenants/{tenant}/boundaries": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tenants/" + t + "/boundaries"}
	}},
	"PUT /api/v1/tenants/{tenant}/boundaries": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "PUT", path: "/api/v1/tenants/" + t + "/boundaries", body: plans, headers: anyRevision}
	}},
	"GET /api/v1/whoami": {build: func(_ *fixture, _ string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/whoami"}
	}, other: 200},
	"GET /api/v1/tokens": {build: func(_ *fixture, _ string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tokens"}
	}, other: 200},
	"POST /api/v1/tokens": {build: func(_ *fixture, t string, n int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/tokens", body: fmt.Sprintf(`{"access":"viewer","tenant":%q,"name":"made-%d"}`, t, n)}
	}, other: 403},
	"DELETE /api/v1/tokens/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		name := fmt.Sprintf("doomed-%s-%d", t, n)
		f.token(name, auth.RoleViewer, t)
		return matrixReq{method: "DELETE", path: "/api/v1/tokens/tok-" + name}
	}},
	"POST /api/v1/runs/{id}/usage": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/runs/run-" + t + "/usage", body: `{"turns":1}`}
	}},

	"GET /api/v1/surface": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/surface?role=desk&tenant=" + t}
	}},
	"POST /api/v1/review": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/review", body: fmt.Sprintf(`{"tool":"files_read","input":{"path":"a.txt"},"role":"desk","tenant":%q}`, t)}
	}},
	"POST /api/v1/review/outcome": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/review/outcome", body: fmt.Sprintf(`{"call":"call-%s","outcome":"ok"}`, t)}
	}},
	"GET /api/v1/approvals/events": {build: func(_ *fixture, _ string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/approvals/events", stream: true}
	}, other: 200},

	"GET /api/v1/tenants": {build: func(_ *fixture, _ string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tenants"}
	}, other: 200},
	"POST /api/v1/tenants": {build: func(_ *fixture, t string, n int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/tenants", body: fmt.Sprintf(`{"id":"new-%s-%d"}`, t, n)}
	}, other: 201},
	"GET /api/v1/tenants/{tenant}": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tenants/" + t}
	}},
	"PUT /api/v1/tenants/{tenant}": {build: func(_ *fixture, t string, n int) matrixReq {
		id := fmt.Sprintf("put-%s-%d", t, n)
		return matrixReq{method: "PUT", path: "/api/v1/tenants/" + id, body: fmt.Sprintf(`{"id":%q}`, id), headers: []string{"If-Match", `"0"`}}
	}, other: 201},
	"DELETE /api/v1/tenants/{tenant}": {build: func(f *fixture, t string, n int) matrixReq {
		id := fmt.Sprintf("del-%s-%d", t, n)
		f.seed("/api/v1/tenants/"+id, fmt.Sprintf(`{"id":%q}`, id))
		return matrixReq{method: "DELETE", path: "/api/v1/tenants/" + id, headers: anyRevision}
	}, other: 204},
	"GET /api/v1/tenants/{tenant}/connections": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tenants/" + t + "/connections"}
	}},
	"POST /api/v1/tenants/{tenant}/connections": {build: func(_ *fixture, t string, n int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/tenants/" + t + "/connections",
			body: fmt.Sprintf(`{"id":"%s-posted-%d","connector":"shop","enabled":false}`, t, n)}
	}},
	"GET /api/v1/tenants/{tenant}/connections/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "GET", path: seedConnection(f, t, n)}
	}},
	"PUT /api/v1/tenants/{tenant}/connections/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		path := seedConnection(f, t, n)
		id := path[strings.LastIndex(path, "/")+1:]
		return matrixReq{method: "PUT", path: path, body: fmt.Sprintf(`{"id":%q,"connector":"shop","name":"Changed","enabled":false}`, id), headers: anyRevision}
	}},
	"DELETE /api/v1/tenants/{tenant}/connections/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "DELETE", path: seedConnection(f, t, n), headers: anyRevision}
	}},
	"GET /api/v1/tenants/{tenant}/connections/{id}/tools": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "GET", path: seedConnection(f, t, n) + "/tools"}
	}},
	"GET /api/v1/tenants/{tenant}/profiles": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tenants/" + t + "/profiles"}
	}},
	"POST /api/v1/tenants/{tenant}/profiles": {build: func(_ *fixture, t string, n int) matrixReq {
		return matrixReq{method: "POST", path: "/api/v1/tenants/" + t + "/profiles", body: fmt.Sprintf(`{"id":"%s-posted-%d","role":"specialist","tools":["mcp__shop__list"],"grant":{"connectors":["shop"]}}`, t, n)}
	}},
	"GET /api/v1/tenants/{tenant}/profiles/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "GET", path: seedProfile(f, t, n)}
	}},
	"PUT /api/v1/tenants/{tenant}/profiles/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		path := seedProfile(f, t, n)
		id := path[strings.LastIndex(path, "/")+1:]
		return matrixReq{method: "PUT", path: path, body: fmt.Sprintf(`{"id":%q,"name":"Changed","role":"specialist","tools":["mcp__shop__list"],"grant":{"connectors":["shop"]}}`, id), headers: anyRevision}
	}},
	"DELETE /api/v1/tenants/{tenant}/profiles/{id}": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "DELETE", path: seedProfile(f, t, n), headers: anyRevision}
	}},
	"GET /api/v1/tenants/{tenant}/profiles/{id}/grant": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "GET", path: seedProfile(f, t, n) + "/grant"}
	}},
	"PUT /api/v1/tenants/{tenant}/profiles/{id}/grant": {build: func(f *fixture, t string, n int) matrixReq {
		return matrixReq{method: "PUT", path: seedProfile(f, t, n) + "/grant", body: `{"connectors":["shop","crawl"],"allowance":{"crawl":{"perRun":1,"perDay":2}}}`, headers: anyRevision}
	}},
	"GET /api/v1/tenants/{tenant}/allowances": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tenants/" + t + "/allowances"}
	}},
	"GET /api/v1/tenants/{tenant}/egress": {build: func(_ *fixture, t string, _ int) matrixReq {
		return matrixReq{method: "GET", path: "/api/v1/tenants/" + t + "/egress"}
	}},
	"PUT /api/v1/tenants/{tenant}/egress": {build: func(_ *fixture, t string, n int) matrixReq {
		return matrixReq{method: "PUT", path: "/api/v1/tenants/" + t + "/egress", body: fmt.Sprintf(`{"allow":["h%d.example.com"]}`, n), headers: anyRevision}
	}},
}

// matrixRoles are the token of each role in the matrix, all but the admin's of acme.
var matrixRoles = []struct{ role, token string }{
	{auth.RoleAdmin, "admin"}, {auth.RoleOperator, "acme-operator"}, {auth.RoleApprover, "acme-approver"},
	{auth.RoleViewer, "acme-viewer"}, {auth.RoleAgent, "agent"},
}

// Every route under /api/v1 × every role × the caller's own tenant and another (and another
// tenant's object named under the caller's tenant): a role the route does not take is 403;
// another tenant's object is 404 (a list shows none of it); the rest succeeds. The management routes take exactly the roles of H1, and nothing any token
// of acme does changes beta's data.
func TestRoleTenantMatrix(t *testing.T) {
	f := newDataFixture(t, func(o *server.Options, db *sqlite.DB) {
		o.Boundaries = storedBoundaries{db: db, t: boundary.NewTenants(boundary.TenantsOptions{Store: db})}
		o.Runs = matrixRuns{}
		o.Explorer = newPolicyExplorer(t)
		o.Agents = newPolicyExplorer(t)
		o.Cards = &server.CardFeed{}
	})
	ctx := context.Background()
	for _, tenant := range []string{"acme", "beta"} {
		f.card(tenant, "seen-"+tenant)
		if err := f.db.AddStanding(ctx, &approval.Standing{ID: "standing-" + tenant, Tenant: tenant, Tool: "mcp__shop__order", Digest: "d", Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := f.db.Append(ctx, &audit.Event{Kind: audit.KindDecision, Time: time.Now(), Tenant: tenant, Session: "s-" + tenant, Tool: "mcp__shop__list", Decision: "allow"}); err != nil {
			t.Fatal(err)
		}
	}

	type run struct {
		route, role, token, side string
		roles                    []string
		c                        matrixCase
		req                      matrixReq
	}
	var runs []run
	n := 0
	for _, rt := range server.Routes() {
		key := rt.Method + " " + rt.Path
		if !strings.HasPrefix(rt.Path, "/api/v1/") || len(rt.Roles) == 0 {
			continue
		}
		if want, ok := managementRoles[key]; ok && !sameRoles(want, rt.Roles) {
			t.Errorf("%s takes %v; H1 says %v", key, rt.Roles, want)
		}
		if strings.HasPrefix(rt.Path, "/api/v1/tenants") && slices.Contains(rt.Roles, auth.RoleAgent) {
			t.Errorf("%s takes agent tokens, which are for /mcp only", key)
		}
		c, ok := matrixCases[key]
		if !ok {
			t.Errorf("%s has no case in the matrix", key)
			continue
		}
		// cross: beta's object named under acme's path, which no token may reach that way.
		cross := strings.HasPrefix(rt.Path, "/api/v1/tenants/{tenant}/") && strings.Contains(rt.Path, "{id}")
		for _, r := range matrixRoles {
			for _, side := range []string{"acme", "beta", "cross"} {
				n++
				switch {
				case side == "cross" && !cross:
				case side == "cross":
					req := c.build(f, "beta", n)
					req.path = strings.Replace(req.path, "/tenants/beta/", "/tenants/acme/", 1)
					runs = append(runs, run{route: key, role: r.role, token: r.token, side: side, roles: rt.Roles, c: c, req: req})
				default:
					runs = append(runs, run{route: key, role: r.role, token: r.token, side: side, roles: rt.Roles, c: c, req: c.build(f, side, n)})
				}
			}
		}
	}

	before := betaData(f)
	check := func(r run) {
		t.Helper()
		var code int
		var body string
		if r.req.stream {
			code, _, body = f.streamOpen(r.req.path, r.token)
		} else {
			code, _, body = f.request(r.req.method, r.req.path, r.token, r.req.body, r.req.headers...)
		}
		name := fmt.Sprintf("%s as %s at %s (%s %s)", r.route, r.role, r.side, r.req.method, r.req.path)
		want := 0 // any 2xx
		switch {
		case !slices.Contains(r.roles, r.role):
			want = http.StatusForbidden
		case r.side == "cross":
			want = http.StatusNotFound
		case r.side == "beta" && r.role != auth.RoleAdmin && r.c.other != 0:
			want = r.c.other
		case r.side == "beta" && r.role != auth.RoleAdmin:
			want = http.StatusNotFound
		}
		switch {
		case want == 0 && (code < 200 || code > 299):
			t.Errorf("%s: %d %s; want a success", name, code, body)
		case want != 0 && code != want:
			t.Errorf("%s: %d %s; want %d", name, code, body, want)
		case r.side != "acme" && r.role != auth.RoleAdmin && code < 300 && strings.Contains(body, "beta"):
			t.Errorf("%s: %d shows beta's data to acme: %s", name, code, body)
		}
	}
	// acme's tokens first, then beta's data must be as it was; the admin's requests last.
	for _, r := range runs {
		if r.role != auth.RoleAdmin {
			check(r)
		}
	}
	if after := betaData(f); after != before {
		t.Errorf("acme's tokens changed beta's data:\nbefore %s\nafter  %s", before, after)
	}
	for _, r := range runs {
		if r.role == auth.RoleAdmin {
			check(r)
		}
	}
}

// betaData is everything of beta's the API shows an admin, as one string.
func betaData(f *fixture) string {
	f.t.Helper()
	var out []string
	for _, path := range []string{
		"/api/v1/tenants/beta", "/api/v1/tenants/beta/connections?limit=1000", "/api/v1/tenants/beta/profiles?limit=1000",
		"/api/v1/tenants/beta/egress", "/api/v1/tenants/beta/boundaries", "/api/v1/approvals?tenant=beta",
		"/api/v1/audit?tenant=beta&kind=decision", "/api/v1/approvals/standing", "/api/v1/tokens",
	} {
		code, h, body := f.request("GET", path, "admin", "")
		if code != http.StatusOK {
			f.t.Fatalf("GET %s as admin: %d %s", path, code, body)
		}
		// The lists of every tenant: keep beta's part.
		var all map[string][]map[string]any
		if (strings.HasSuffix(path, "standing") || strings.HasSuffix(path, "tokens")) && json.Unmarshal([]byte(body), &all) == nil {
			for k, list := range all {
				all[k] = slices.DeleteFunc(list, func(m map[string]any) bool { return m["tenant"] != "beta" })
			}
			raw, _ := json.Marshal(all)
			body = string(raw)
		}
		out = append(out, path+" "+h.Get("ETag")+" "+body)
	}
	return strings.Join(out, "\n")
}
