package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
)

// openapiURL is where the test's schema compiler keeps the document; nothing is fetched.
const openapiURL = "https://warden.invalid/openapi.json"

// openapiDoc is the parts of the OpenAPI document the tests read.
type openapiDoc struct {
	OpenAPI    string                                 `json:"openapi"`
	Paths      map[string]map[string]openapiOperation `json:"paths"`
	Components struct {
		Responses map[string]openapiResponse `json:"responses"`
	} `json:"components"`
}

type openapiOperation struct {
	ID         string `json:"operationId"`
	Parameters []struct {
		Name, In string
		Required bool
	} `json:"parameters"`
	Roles     []string                   `json:"x-warden-roles"`
	Security  []map[string][]string      `json:"security"`
	Responses map[string]openapiResponse `json:"responses"`
}

type openapiResponse struct {
	Ref     string                     `json:"$ref"`
	Content map[string]json.RawMessage `json:"content"`
}

func readOpenAPI(t *testing.T) openapiDoc {
	t.Helper()
	var doc openapiDoc
	if err := json.Unmarshal(server.OpenAPI(), &doc); err != nil {
		t.Fatalf("server/openapi.json: %v", err)
	}
	return doc
}

// The document describes every route the server registers, with the roles it takes, and
// nothing else.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := readOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("openapi %q; want 3.1.x", doc.OpenAPI)
	}
	served := map[string]server.Route{}
	for _, rt := range server.Routes() {
		served[rt.Method+" "+rt.Path] = rt
	}
	described, ids := map[string]bool{}, map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			described[key] = true
			if other, dup := ids[op.ID]; dup || op.ID == "" {
				t.Errorf("%s: operationId %q is empty or also %s's", key, op.ID, other)
			}
			ids[op.ID] = key
			var want, got []string
			for _, seg := range strings.Split(path, "/") {
				if name, ok := strings.CutPrefix(seg, "{"); ok {
					want = append(want, strings.TrimSuffix(name, "}"))
				}
			}
			for _, p := range op.Parameters {
				if p.In == "path" && p.Required {
					got = append(got, p.Name)
				}
			}
			if !slices.Equal(want, got) {
				t.Errorf("%s: path parameters %v described; want %v, required", key, got, want)
			}
			rt, ok := served[key]
			if !ok {
				t.Errorf("openapi.json describes %s, which the server does not serve", key)
				continue
			}
			if !sameRoles(op.Roles, rt.Roles) {
				t.Errorf("%s: x-warden-roles %v; the server lets %v use it", key, op.Roles, rt.Roles)
			}
			if public := len(op.Security) == 0; public != (len(rt.Roles) == 0) {
				t.Errorf("%s: security %v, but the server's roles are %v", key, op.Security, rt.Roles)
			}
			if len(rt.Roles) > 0 && op.Responses["401"].Ref == "" {
				t.Errorf("%s needs a token but does not describe 401", key)
			}
			// 403 is the answer to a role the route does not take; a route every role takes
			// never gives it.
			if every := len(rt.Roles) == len(auth.Roles); len(rt.Roles) > 0 && !every && op.Responses["403"].Ref == "" {
				t.Errorf("%s takes only some roles but does not describe 403", key)
			}
		}
	}
	for key := range served {
		if !described[key] {
			t.Errorf("the server serves %s, which openapi.json does not describe", key)
		}
	}
}

func sameRoles(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// testRuns stands for the gateway's runs: run-live records what is reported, run-ended has
// ended, and a run of another tenant is not seen.
type testRuns struct{}

func (testRuns) RunUsage(_ context.Context, id string, u gate.Usage, may func(tenant, profile, token string) bool) (*gate.Standing, error) {
	st := &gate.Standing{Run: id, Tenant: "acme", Profile: "default", Turns: 3 + u.Turns, MaxTurns: 10, ModelUsd: 0.5 + u.ModelUsd,
		Month: "2026-12", MonthUsd: 4, MonthlyCapUsd: 100, Recorded: u}
	switch {
	case id != "run-live" && id != "run-ended", !may(st.Tenant, st.Profile, ""):
		return nil, budget.ErrNotFound
	case id == "run-ended":
		st.Ended, st.Recorded = true, gate.Usage{}
		return st, budget.ErrRunEnded
	}
	return st, nil
}

// openapiCase is a request and the answer it must get, which must be one the document
// describes for route ("" for the mux's 404 and 405).
type openapiCase struct {
	route, method, path, token, body string
	headers                          []string
	want                             int
	// stream: the answer is an event stream, read up to its first event and then left.
	stream bool
}

// Real answers of a server on SQLite fit the document: each status is one the route
// describes, with its content type and a body its schema accepts; every route is tried with
// at least one success and one error.
func TestOpenAPIResponses(t *testing.T) {
	f := newFixtureWith(t, func(o *server.Options, db *sqlite.DB) {
		o.Boundaries = storedBoundaries{db: db, t: boundary.NewTenants(boundary.TenantsOptions{Store: db})}
		o.Metrics = metrics.New(metrics.Sources{}).Handler()
		o.Runs = testRuns{}
		o.Data = newTestData(t, db)
		o.Explorer = newPolicyExplorer(t)
		o.Agents = newPolicyExplorer(t)
		o.Cards = &server.CardFeed{}
	})
	ctx := context.Background()
	f.card("acme", "c1")
	f.card("acme", "c2")
	if err := f.db.AddStanding(ctx, &approval.Standing{ID: "st1", Tenant: "acme", Tool: "mcp__sheets__sheets_append", Digest: "d-x",
		CardID: "cx", Approver: "bob", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Append(ctx, &audit.Event{Kind: audit.KindDecision, Time: time.Now(), Tenant: "acme", Session: "s1", Tool: "Bash",
		Decision: "deny", Blockers: []audit.Blocker{{Code: "permission_denied"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []struct{ name, role, tenant string }{{"acme-operator", auth.RoleOperator, "acme"}, {"doomed", auth.RoleViewer, "acme"}} {
		secret, hash, err := auth.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.db.CreateToken(ctx, &auth.Token{ID: "tok-" + tk.name, Hash: hash, Role: tk.role, Tenant: tk.tenant, Name: tk.name, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		f.tokens[tk.name] = secret
	}

	const (
		approvals = "GET /api/v1/approvals"
		standing  = "GET /api/v1/approvals/standing"
		revoke    = "DELETE /api/v1/approvals/standing/{id}"
		card      = "GET /api/v1/approvals/{id}"
		answer    = "POST /api/v1/approvals/{id}"
		auditQ    = "GET /api/v1/audit"
		getB      = "GET /api/v1/tenants/{tenant}/boundaries"
		putB      = "PUT /api/v1/tenants/{tenant}/boundaries"
		tokens    = "GET /api/v1/tokens"
		newToken  = "POST /api/v1/tokens"
		delToken  = "DELETE /api/v1/tokens/{id}"
		usage     = "POST /api/v1/runs/{id}/usage"
		surfaceQ  = "GET /api/v1/surface"
		reviewQ   = "POST /api/v1/review"
		events    = "GET /api/v1/approvals/events"
	)
	// The management plane's routes.
	const (
		tenantsL  = "GET /api/v1/tenants"
		tenantsC  = "POST /api/v1/tenants"
		tenantG   = "GET /api/v1/tenants/{tenant}"
		tenantP   = "PUT /api/v1/tenants/{tenant}"
		tenantD   = "DELETE /api/v1/tenants/{tenant}"
		connsL    = "GET /api/v1/tenants/{tenant}/connections"
		connsC    = "POST /api/v1/tenants/{tenant}/connections"
		connG     = "GET /api/v1/tenants/{tenant}/connections/{id}"
		connP     = "PUT /api/v1/tenants/{tenant}/connections/{id}"
		connD     = "DELETE /api/v1/tenants/{tenant}/connections/{id}"
		connTools = "GET /api/v1/tenants/{tenant}/connections/{id}/tools"
		profsL    = "GET /api/v1/tenants/{tenant}/profiles"
		profsC    = "POST /api/v1/tenants/{tenant}/profiles"
		profG     = "GET /api/v1/tenants/{tenant}/profiles/{id}"
		profP     = "PUT /api/v1/tenants/{tenant}/profiles/{id}"
		profD     = "DELETE /api/v1/tenants/{tenant}/profiles/{id}"
		grantG    = "GET /api/v1/tenants/{tenant}/profiles/{id}/grant"
		grantP    = "PUT /api/v1/tenants/{tenant}/profiles/{id}/grant"
		allowG    = "GET /api/v1/tenants/{tenant}/allowances"
		egressG   = "GET /api/v1/tenants/{tenant}/egress"
		egressP   = "PUT /api/v1/tenants/{tenant}/egress"
	)
	const (
		conn    = `{"id":"acme-new","connector":"shop","name":"New Store","enabled":false}`
		prof    = `{"id":"acme-seo","role":"specialist","tools":["mcp__shop__list"],"grant":{"connectors":["shop"]}}`
		badProf = `{"id":"acme-seo","role":"specialist","tools":["mcp__shop__nothing"],"grant":{"connectors":["nowhere"]}}`
		ifNone  = `"0"`
	)
	cases := []openapiCase{
		{route: "GET /healthz", method: "GET", path: "/healthz", want: 200},
		{method: "POST", path: "/healthz", want: 405},
		{route: "GET /readyz", method: "GET", path: "/readyz", want: 200},
		{route: "GET /metrics", method: "GET", path: "/metrics", token: "admin", want: 200},
		{route: "GET /metrics", method: "GET", path: "/metrics", token: "acme-viewer", want: 403},
		{route: "GET /api/v1/openapi.json", method: "GET", path: "/api/v1/openapi.json", want: 200},
		{method: "PUT", path: "/api/v1/openapi.json", want: 405},
		{method: "GET", path: "/api/v1/nothing-here", token: "admin", want: 404},
		{method: "GET", path: "/api/v2/approvals", want: 404},

		{route: approvals, method: "GET", path: "/api/v1/approvals?state=pending", token: "acme-viewer", want: 200},
		{route: approvals, method: "GET", path: "/api/v1/approvals?state=maybe", token: "acme-viewer", want: 400},
		{route: approvals, method: "GET", path: "/api/v1/approvals", want: 401},
		{route: approvals, method: "GET", path: "/api/v1/approvals", token: "agent", want: 403},
		{method: "PATCH", path: "/api/v1/approvals", token: "admin", want: 405},
		{route: card, method: "GET", path: "/api/v1/approvals/c2", token: "acme-approver", want: 200},
		{route: card, method: "GET", path: "/api/v1/approvals/c2", token: "beta-approver", want: 404},
		{route: answer, method: "POST", path: "/api/v1/approvals/c1", token: "acme-approver", body: `{"answer":"allow_tenant","digest":"d-c1"}`, want: 200},
		{route: answer, method: "POST", path: "/api/v1/approvals/c1", token: "acme-approver", body: `{"answer":"deny"}`, want: 409},
		{route: answer, method: "POST", path: "/api/v1/approvals/c2", token: "acme-approver", body: `{"answer":"maybe"}`, want: 400},
		{route: answer, method: "POST", path: "/api/v1/approvals/c2", token: "acme-viewer", body: `{"answer":"deny"}`, want: 403},
		{route: standing, method: "GET", path: "/api/v1/approvals/standing", token: "acme-viewer", want: 200},
		{route: standing, method: "GET", path: "/api/v1/approvals/standing", token: "agent", want: 403},
		{route: revoke, method: "DELETE", path: "/api/v1/approvals/standing/st1", token: "acme-approver", want: 204},
		{route: revoke, method: "DELETE", path: "/api/v1/approvals/standing/st1", token: "acme-approver", want: 404},

		{route: auditQ, method: "GET", path: "/api/v1/audit", token: "acme-viewer", want: 200},
		{route: auditQ, method: "GET", path: "/api/v1/audit?format=jsonl", token: "admin", want: 200},
		{route: auditQ, method: "GET", path: "/api/v1/audit?since=yesterday", token: "admin", want: 400},
		{route: "GET /api/v1/audit/keys", method: "GET", path: "/api/v1/audit/keys", token: "acme-viewer", want: 200},
		{route: "GET /api/v1/audit/keys", method: "GET", path: "/api/v1/audit/keys", token: "acme-operator", want: 403},

		{route: getB, method: "GET", path: "/api/v1/tenants/acme/boundaries", token: "acme-viewer", want: 200},
		{route: getB, method: "GET", path: "/api/v1/tenants/beta/boundaries", token: "acme-viewer", want: 404},
		{route: putB, method: "PUT", path: "/api/v1/tenants/acme/boundaries", token: "admin", body: plans, headers: []string{"If-Match", `"0"`}, want: 200},
		{route: putB, method: "PUT", path: "/api/v1/tenants/acme/boundaries", token: "admin", body: plans, headers: []string{"If-Match", `"0"`}, want: 412},
		{route: putB, method: "PUT", path: "/api/v1/tenants/acme/boundaries", token: "admin", body: plans, want: 428},
		{route: putB, method: "PUT", path: "/api/v1/tenants/acme/boundaries", token: "admin", body: `{"version":2,"hardBlocks":[{}]}`, headers: []string{"If-Match", "*"}, want: 422},
		{method: "DELETE", path: "/api/v1/tenants/acme/boundaries", token: "admin", want: 405},

		{route: tokens, method: "GET", path: "/api/v1/tokens", token: "acme-operator", want: 200},
		{route: tokens, method: "GET", path: "/api/v1/tokens", token: "acme-viewer", want: 403},
		{route: "GET /api/v1/whoami", method: "GET", path: "/api/v1/whoami", token: "acme-approver", want: 200},
		{route: "GET /api/v1/whoami", method: "GET", path: "/api/v1/whoami", token: "agent", want: 200},
		{route: "GET /api/v1/whoami", method: "GET", path: "/api/v1/whoami", want: 401},
		{route: newToken, method: "POST", path: "/api/v1/tokens", token: "acme-operator", body: `{"access":"approver","name":"ann"}`, want: 201},
		{route: newToken, method: "POST", path: "/api/v1/tokens", token: "acme-operator", body: `{"access":"admin"}`, want: 403},
		{route: newToken, method: "POST", path: "/api/v1/tokens", token: "admin", body: `{"access":"god"}`, want: 400},
		{route: newToken, method: "POST", path: "/api/v1/tokens", token: "admin", body: `{"tenant":"acme"}`, want: 501},
		{route: delToken, method: "DELETE", path: "/api/v1/tokens/tok-doomed", token: "acme-operator", want: 204},
		{route: delToken, method: "DELETE", path: "/api/v1/tokens/tok-beta-approver", token: "acme-operator", want: 404},

		{route: usage, method: "POST", path: "/api/v1/runs/run-live/usage", token: "acme-operator", body: `{"turns":1,"modelUsd":0.25}`, want: 200},
		{route: usage, method: "POST", path: "/api/v1/runs/run-ended/usage", token: "acme-operator", body: `{"turns":1}`, want: 409},
		{route: usage, method: "POST", path: "/api/v1/runs/run-live/usage", token: "acme-operator", body: `{"turns":-1,"tokens":5}`, want: 422},
		{route: usage, method: "POST", path: "/api/v1/runs/run-live/usage", token: "acme-operator", body: `[1`, want: 400},
		{route: usage, method: "POST", path: "/api/v1/runs/run-live/usage", token: "beta-approver", body: `{}`, want: 403},
		{route: usage, method: "POST", path: "/api/v1/runs/run-other/usage", token: "admin", body: `{}`, want: 404},

		{route: tenantsL, method: "GET", path: "/api/v1/tenants?limit=1", token: "admin", want: 200},
		{route: tenantsL, method: "GET", path: "/api/v1/tenants?limit=0", token: "admin", want: 400},
		{route: tenantsC, method: "POST", path: "/api/v1/tenants", token: "admin", body: `{"id":"gamma"}`, want: 201},
		{route: tenantsC, method: "POST", path: "/api/v1/tenants", token: "admin", body: `{"id":"gamma"}`, want: 409},
		{route: tenantsC, method: "POST", path: "/api/v1/tenants", token: "acme-operator", body: `{"id":"delta"}`, want: 403},
		{route: tenantG, method: "GET", path: "/api/v1/tenants/acme", token: "acme-viewer", want: 200},
		{route: tenantG, method: "GET", path: "/api/v1/tenants/beta", token: "acme-viewer", want: 404},
		{route: tenantP, method: "PUT", path: "/api/v1/tenants/gamma", token: "admin", body: `{"id":"gamma","name":"Gamma"}`, headers: []string{"If-Match", `"1"`}, want: 200},
		{route: tenantP, method: "PUT", path: "/api/v1/tenants/gamma", token: "admin", body: `{"id":"gamma"}`, headers: []string{"If-Match", `"1"`}, want: 412},
		{route: tenantP, method: "PUT", path: "/api/v1/tenants/acme", token: "admin", body: `{"id":"acme"}`, headers: []string{"If-Match", "*"}, want: 409},
		{route: tenantD, method: "DELETE", path: "/api/v1/tenants/gamma", token: "admin", want: 428},
		{route: tenantD, method: "DELETE", path: "/api/v1/tenants/gamma", token: "admin", headers: []string{"If-Match", `"2"`}, want: 204},
		{route: connsL, method: "GET", path: "/api/v1/tenants/acme/connections", token: "acme-viewer", want: 200},
		{route: connsL, method: "GET", path: "/api/v1/tenants/beta/connections", token: "acme-viewer", want: 404},
		{route: connsC, method: "POST", path: "/api/v1/tenants/acme/connections", token: "acme-operator", body: conn, want: 201},
		{route: connsC, method: "POST", path: "/api/v1/tenants/acme/connections", token: "acme-operator", body: `{"id":"x","connector":"nowhere"}`, want: 422},
		{route: connsC, method: "POST", path: "/api/v1/tenants/acme/connections", token: "acme-operator", body: `[]`, want: 400},
		{route: connG, method: "GET", path: "/api/v1/tenants/acme/connections/new%20store", token: "acme-viewer", want: 200},
		{route: connG, method: "GET", path: "/api/v1/tenants/acme/connections/outlet", token: "acme-viewer", want: 409},
		{route: connP, method: "PUT", path: "/api/v1/tenants/acme/connections/acme-new", token: "acme-operator", body: conn, headers: []string{"If-Match", "*"}, want: 200},
		{route: connP, method: "PUT", path: "/api/v1/tenants/acme/connections/acme-made", token: "acme-operator", body: `{"id":"acme-made","connector":"shop","enabled":false}`, headers: []string{"If-Match", ifNone}, want: 201},
		{route: connP, method: "PUT", path: "/api/v1/tenants/acme/connections/acme-new", token: "acme-operator", body: conn, want: 428},
		{route: connP, method: "PUT", path: "/api/v1/tenants/acme/connections/acme-new", token: "acme-operator", body: `{"id":"acme-new","padding":"` + strings.Repeat("x", 1<<20) + `"}`, headers: []string{"If-Match", "*"}, want: 413},
		{route: connD, method: "DELETE", path: "/api/v1/tenants/acme/connections/acme-new", token: "acme-operator", headers: []string{"If-Match", `"1"`}, want: 412},
		{route: connD, method: "DELETE", path: "/api/v1/tenants/acme/connections/acme-new", token: "acme-operator", headers: []string{"If-Match", "*"}, want: 204},
		{route: connTools, method: "GET", path: "/api/v1/tenants/acme/connections/acme-shop/tools?profile=researcher", token: "acme-viewer", want: 200},
		{route: connTools, method: "GET", path: "/api/v1/tenants/acme/connections/acme-shop/tools?profile=nobody", token: "acme-viewer", want: 404},
		{route: profsL, method: "GET", path: "/api/v1/tenants/acme/profiles", token: "acme-viewer", want: 200},
		{route: profsL, method: "GET", path: "/api/v1/tenants/acme/profiles", token: "agent", want: 403},
		{route: profsC, method: "POST", path: "/api/v1/tenants/acme/profiles", token: "acme-operator", body: prof, want: 201},
		{route: profsC, method: "POST", path: "/api/v1/tenants/acme/profiles", token: "acme-viewer", body: prof, want: 403},
		{route: profG, method: "GET", path: "/api/v1/tenants/acme/profiles/acme-seo", token: "acme-viewer", want: 200},
		{route: profG, method: "GET", path: "/api/v1/tenants/acme/profiles/researcher", token: "acme-viewer", want: 200},
		{route: profG, method: "GET", path: "/api/v1/tenants/beta/profiles/acme-seo", token: "admin", want: 404},
		{route: profP, method: "PUT", path: "/api/v1/tenants/acme/profiles/acme-seo", token: "acme-operator", body: prof, headers: []string{"If-Match", `"1"`}, want: 200},
		{route: profP, method: "PUT", path: "/api/v1/tenants/acme/profiles/acme-seo", token: "acme-operator", body: badProf, headers: []string{"If-Match", `"2"`}, want: 422},
		{route: grantG, method: "GET", path: "/api/v1/tenants/acme/profiles/acme-seo/grant", token: "acme-viewer", want: 200},
		{route: grantG, method: "GET", path: "/api/v1/tenants/acme/profiles/nobody/grant", token: "acme-viewer", want: 404},
		{route: grantP, method: "PUT", path: "/api/v1/tenants/acme/profiles/acme-seo/grant", token: "acme-operator", body: `{"connectors":["shop"]}`, headers: []string{"If-Match", `"2"`}, want: 200},
		{route: grantP, method: "PUT", path: "/api/v1/tenants/acme/profiles/acme-seo/grant", token: "acme-operator", body: `{"connectors":["nowhere"]}`, headers: []string{"If-Match", "*"}, want: 422},
		{route: grantP, method: "PUT", path: "/api/v1/tenants/acme/profiles/acme-seo/grant", token: "acme-operator", body: `{}`, headers: []string{"If-Match", `"1"`}, want: 412},
		{route: profD, method: "DELETE", path: "/api/v1/tenants/acme/profiles/researcher", token: "acme-operator", headers: []string{"If-Match", "*"}, want: 409},
		{route: profD, method: "DELETE", path: "/api/v1/tenants/acme/profiles/acme-seo", token: "acme-operator", headers: []string{"If-Match", "*"}, want: 204},
		{route: allowG, method: "GET", path: "/api/v1/tenants/acme/allowances", token: "acme-viewer", want: 200},
		{route: allowG, method: "GET", path: "/api/v1/tenants/nowhere/allowances", token: "admin", want: 404},
		{route: egressG, method: "GET", path: "/api/v1/tenants/acme/egress", token: "acme-viewer", want: 200},
		{route: egressG, method: "GET", path: "/api/v1/tenants/acme/egress", token: "beta-approver", want: 404},
		{route: egressP, method: "PUT", path: "/api/v1/tenants/acme/egress", token: "acme-operator", body: `{"allow":["api.example.com"]}`, headers: []string{"If-Match", ifNone}, want: 200},
		{route: egressP, method: "PUT", path: "/api/v1/tenants/acme/egress", token: "acme-operator", body: `{"allow":[]}`, headers: []string{"If-Match", ifNone}, want: 412},
		{route: surfaceQ, method: "GET", path: "/api/v1/surface?role=desk&env=A=1", token: "acme-viewer", want: 200},
		{route: surfaceQ, method: "GET", path: "/api/v1/surface?tenant=beta&role=desk", token: "acme-viewer", want: 404},
		{route: surfaceQ, method: "GET", path: "/api/v1/surface?role=nobody", token: "acme-viewer", want: 400},
		{route: surfaceQ, method: "GET", path: "/api/v1/surface?role=desk", token: "agent", want: 403},
		{route: reviewQ, method: "POST", path: "/api/v1/review", token: "acme-viewer", body: `{"tool":"files_write","input":{"path":"a","content":"x"},"role":"desk"}`, want: 200},
		{route: reviewQ, method: "POST", path: "/api/v1/review", token: "acme-viewer", body: `{"tool":""}`, want: 400},
		{route: reviewQ, method: "POST", path: "/api/v1/review", token: "acme-approver", body: `{"tool":"files_read"}`, want: 403},
		{route: reviewQ, method: "POST", path: "/api/v1/review", token: "agent", body: `{"tool":"files_write","input":{"path":"a","content":"x"},"harness":"claude-code","session":"s1","wait":0}`, want: 200},
		{route: reviewQ, method: "POST", path: "/api/v1/review", token: "agent", body: `{"tool":"files_read","role":"reader"}`, want: 403},
		{route: "POST /api/v1/review/outcome", method: "POST", path: "/api/v1/review/outcome", token: "agent", body: `{"call":"call-1","outcome":"ok"}`, want: 204},
		{route: "POST /api/v1/review/outcome", method: "POST", path: "/api/v1/review/outcome", token: "agent", body: `{"call":"call-2","outcome":"ok"}`, want: 404},
		{route: "POST /api/v1/review/outcome", method: "POST", path: "/api/v1/review/outcome", token: "acme-viewer", body: `{"call":"call-1","outcome":"ok"}`, want: 403},
		{route: events, method: "GET", path: "/api/v1/approvals/events", token: "acme-approver", want: 200, stream: true},
		{route: events, method: "GET", path: "/api/v1/approvals/events", token: "agent", want: 403},
	}

	v := newOpenAPIValidator(t)
	ok, failed := map[string]bool{}, map[string]bool{}
	for _, c := range cases {
		name := fmt.Sprintf("%s %s as %q", c.method, c.path, c.token)
		code, header, body := 0, http.Header(nil), ""
		if c.stream {
			code, header, _ = f.streamOpen(c.path, c.token)
		} else {
			code, header, body = f.request(c.method, c.path, c.token, c.body, c.headers...)
		}
		if code != c.want {
			t.Errorf("%s: %d %s; want %d", name, code, body, c.want)
			continue
		}
		if err := v.check(c.route, code, header, body); err != nil {
			t.Errorf("%s: the answer does not fit openapi.json: %v\n%s", name, err, body)
			continue
		}
		if code < 400 {
			ok[c.route] = true
		} else {
			failed[c.route] = true
		}
	}
	for _, rt := range server.Routes() {
		if key := rt.Method + " " + rt.Path; !ok[key] || !failed[key] && len(rt.Roles) > 0 {
			t.Errorf("%s: no success or no error answer was checked against openapi.json", key)
		}
	}
}

// streamOpen opens an event stream and leaves it once its header and first line have
// arrived; an answer that is not a stream is read whole. It returns the status, the header and
// what was read.
func (f *fixture) streamOpen(path, token string) (int, http.Header, string) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.tokens[token])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(raw)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	return resp.StatusCode, resp.Header, line
}

// openapiValidator checks answers against the document's response schemas.
type openapiValidator struct {
	doc      openapiDoc
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

func newOpenAPIValidator(t *testing.T) *openapiValidator {
	t.Helper()
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(server.OpenAPI()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(openapiURL, raw); err != nil {
		t.Fatal(err)
	}
	return &openapiValidator{doc: readOpenAPI(t), compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

// pointerEscape escapes a JSON pointer's token.
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// check checks an answer of route ("" for the mux's own 404 and 405) against the document.
func (v *openapiValidator) check(route string, code int, header http.Header, body string) error {
	var resp openapiResponse
	var at string
	if route == "" {
		name := map[int]string{http.StatusNotFound: "NotFound", http.StatusMethodNotAllowed: "MethodNotAllowed"}[code]
		if name == "" {
			return fmt.Errorf("status %d is no answer of the mux", code)
		}
		if code == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
			return fmt.Errorf("a 405 without an Allow header")
		}
		resp, at = openapiResponse{Ref: "#/components/responses/" + name}, ""
	} else {
		method, path, _ := strings.Cut(route, " ")
		op, ok := v.doc.Paths[path][strings.ToLower(method)]
		if !ok {
			return fmt.Errorf("%s is not described", route)
		}
		resp, ok = op.Responses[strconv.Itoa(code)]
		if !ok {
			return fmt.Errorf("status %d is not described for %s", code, route)
		}
		at = "#/paths/" + pointerEscape(path) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(code)
	}
	if name, ok := strings.CutPrefix(resp.Ref, "#/components/responses/"); ok {
		resp, at = v.doc.Components.Responses[name], resp.Ref
	}
	if len(resp.Content) == 0 {
		if body != "" {
			return fmt.Errorf("a body where the document describes none")
		}
		return nil
	}
	ctype, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("content type %q: %v", header.Get("Content-Type"), err)
	}
	if _, ok := resp.Content[ctype]; !ok {
		return fmt.Errorf("content type %s is not described", ctype)
	}
	if ctype != "application/json" {
		return nil
	}
	loc := openapiURL + at + "/content/" + pointerEscape(ctype) + "/schema"
	sch, ok := v.schemas[loc]
	if !ok {
		if sch, err = v.compiler.Compile(loc); err != nil {
			return fmt.Errorf("compile %s: %v", loc, err)
		}
		v.schemas[loc] = sch
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %v", err)
	}
	return sch.Validate(inst)
}
