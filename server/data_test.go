package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
)

// dataPolicy is the policy file of the management tests: two tenants whose connections share
// a display name, a profile of acme's with a grant and an allowance, a connector that bills.
const dataPolicy = `
version: 1
limits: {runBudgetUsd: 0.5, maxTurns: 10, maxConcurrentRuns: 1, maxDelegationDepth: 0}
connectors:
  - id: shop
    name: Shop
    effect: read
    grantable: true
    tools:
      - name: mcp__shop__list
      - name: mcp__shop__order
        effect: write
        grantable: false
  - id: crawl
    name: Crawl
    effect: read
    grantable: true
    billing: {unit: credits, cost: 1}
    tools:
      - name: mcp__crawl__scrape
profiles:
  - id: researcher
    role: specialist
    tools: [mcp__shop__list]
    grant:
      connectors: [crawl, shop]
      allowance:
        crawl: {perRun: 5, perDay: 20}
tenants:
  - id: acme
    coworkers: [researcher]
    connections:
      - {id: acme-shop, connector: shop, name: Main Store}
      - {id: acme-outlet, connector: shop, name: Outlet, enabled: false}
      - {id: acme-outlet2, connector: shop, name: outlet, enabled: false}
  - id: beta
    connections:
      - {id: beta-shop, connector: shop, name: Main Store}
`

// dataNow is the time of the fake clock of the management tests.
var dataNow = time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)

// newDataFixture is a server with management data (manage.Service on the fixture's store,
// the policy of dataPolicy), and operator tokens of both tenants besides the fixture's own.
func newDataFixture(t *testing.T, opt func(*server.Options, *sqlite.DB)) *fixture {
	t.Helper()
	f := newFixtureWith(t, func(o *server.Options, db *sqlite.DB) {
		o.Data = newTestData(t, db)
		o.Clock = clock.NewFake(dataNow)
		if opt != nil {
			opt(o, db)
		}
	})
	for _, tk := range []struct{ name, role, tenant string }{
		{"acme-operator", auth.RoleOperator, "acme"},
		{"beta-operator", auth.RoleOperator, "beta"},
		{"beta-viewer", auth.RoleViewer, "beta"},
	} {
		f.token(tk.name, tk.role, tk.tenant)
	}
	return f
}

// token adds a token to the fixture.
func (f *fixture) token(name, role, tenant string) {
	f.t.Helper()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.db.CreateToken(context.Background(), &auth.Token{ID: "tok-" + name, Hash: hash, Role: role, Tenant: tenant, Name: name, Created: time.Now()}); err != nil {
		f.t.Fatal(err)
	}
	f.tokens[name] = secret
}

// item is an object as the API shows it.
type item struct {
	Kind, ID, Tenant, Source string
	Revision                 int64
	UpdatedBy                string
	Data                     json.RawMessage
}

// errorBody is the API's error shape, with a write's problems.
type errorBody struct {
	Error struct {
		Code, Message string
		Problems      []struct{ Field, Where, Message string }
	}
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

// A profile goes through its life over the API: created, read back with its ETag, changed
// with it, refused with a stale one or none, refused with every problem, deleted.
func TestProfileLifecycle(t *testing.T) {
	f := newDataFixture(t, nil)
	const coll = "/api/v1/tenants/acme/profiles"
	writer := `{"id":"writer","role":"specialist","tools":["mcp__shop__list"],"grant":{"connectors":["shop"]}}`

	code, h, body := f.request("POST", coll, "acme-operator", writer)
	if code != http.StatusCreated || h.Get("ETag") != `"1"` || h.Get("Location") != coll+"/writer" {
		t.Fatalf("create: %d ETag %q Location %q %s", code, h.Get("ETag"), h.Get("Location"), body)
	}
	if it := decode[item](t, body); it.ID != "writer" || it.Tenant != "acme" || it.Source != "store" || it.Revision != 1 || it.UpdatedBy != "acme-operator" {
		t.Errorf("created: %+v", it)
	}
	code, h, body = f.request("GET", coll+"/writer", "acme-viewer", "")
	if it := decode[item](t, body); code != http.StatusOK || h.Get("ETag") != `"1"` || !jsonEqual(it.Data, writer) {
		t.Fatalf("read back: %d %q %s", code, h.Get("ETag"), body)
	}

	changed := `{"id":"writer","name":"Writer","role":"specialist","tools":["mcp__shop__list"],"grant":{"connectors":["shop"]}}`
	if code, h, body := f.request("PUT", coll+"/writer", "acme-operator", changed, "If-Match", `"1"`); code != http.StatusOK || h.Get("ETag") != `"2"` {
		t.Fatalf("PUT with the ETag read: %d %q %s", code, h.Get("ETag"), body)
	}
	code, h, body = f.request("PUT", coll+"/writer", "acme-operator", writer, "If-Match", `"1"`)
	if e := decode[errorBody](t, body); code != http.StatusPreconditionFailed || e.Error.Code != "stale" || h.Get("ETag") != `"2"` {
		t.Errorf("PUT with a stale ETag: %d %q %s; want 412 stale with the current ETag", code, h.Get("ETag"), body)
	}
	if code, _, body := f.request("PUT", coll+"/writer", "acme-operator", writer); code != http.StatusPreconditionRequired {
		t.Errorf("PUT without If-Match: %d %s; want 428", code, body)
	}
	if code, _, body := f.request("PUT", coll+"/writer", "acme-operator", writer, "If-Match", `W/"2"`); code != http.StatusBadRequest {
		t.Errorf("PUT with a weak ETag: %d %s; want 400", code, body)
	}
	if code, _, body := f.request("PUT", coll+"/writer", "acme-operator", `["not an object"]`, "If-Match", `"2"`); code != http.StatusBadRequest {
		t.Errorf("PUT of an array: %d %s; want 400", code, body)
	}

	// Every problem, each with a JSON pointer into what was written.
	bad := `{"id":"writer","role":"specialist","tools":["mcp__shop__nothing"],"grant":{"connectors":["nowhere"]}}`
	code, _, body = f.request("PUT", coll+"/writer", "acme-operator", bad, "If-Match", `"2"`)
	e := decode[errorBody](t, body)
	var fields []string
	for _, p := range e.Error.Problems {
		fields = append(fields, p.Field)
	}
	if code != http.StatusUnprocessableEntity || e.Error.Code != "invalid" || !slices.Contains(fields, "/grant/connectors/0") || !slices.Contains(fields, "/tools/0") {
		t.Errorf("an unknown connector and tool: %d %s; want 422 with /grant/connectors/0 and /tools/0", code, body)
	}
	if _, h, _ := f.request("GET", coll+"/writer", "acme-viewer", ""); h.Get("ETag") != `"2"` {
		t.Errorf("a refused write changed the profile: ETag %q", h.Get("ETag"))
	}

	// The policy file's profile is read-only here; a taken id cannot be created again.
	if code, _, body := f.request("PUT", coll+"/researcher", "acme-operator", writer, "If-Match", "*"); code != http.StatusConflict || decode[errorBody](t, body).Error.Code != "declared_in_policy" {
		t.Errorf("PUT of a declared profile: %d %s; want 409 declared_in_policy", code, body)
	}
	code, h, body = f.request("GET", coll+"/researcher", "acme-viewer", "")
	if it := decode[item](t, body); code != http.StatusOK || it.Source != "policy" || h.Get("ETag") != "" {
		t.Errorf("a declared profile: %d ETag %q %s; want source policy and no ETag", code, h.Get("ETag"), body)
	}
	if code, _, body := f.request("POST", coll, "acme-operator", writer); code != http.StatusConflict || decode[errorBody](t, body).Error.Code != "exists" {
		t.Errorf("POST of a taken id: %d %s; want 409 exists", code, body)
	}
	if code, _, body := f.request("POST", coll, "acme-operator", `{"role":"coworker"}`); code != http.StatusUnprocessableEntity ||
		decode[errorBody](t, body).Error.Problems[0].Field != "/id" {
		t.Errorf("POST without an id: %d %s; want 422 at /id", code, body)
	}

	if code, _, body := f.request("DELETE", coll+"/writer", "acme-operator", "", "If-Match", `"1"`); code != http.StatusPreconditionFailed {
		t.Errorf("DELETE with a stale ETag: %d %s; want 412", code, body)
	}
	if code, _, body := f.request("DELETE", coll+"/writer", "acme-operator", "", "If-Match", `"2"`); code != http.StatusNoContent || body != "" {
		t.Errorf("DELETE: %d %s; want 204", code, body)
	}
	if code, _, _ := f.request("GET", coll+"/writer", "acme-viewer", ""); code != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d; want 404", code)
	}
}

// jsonEqual reports whether two JSON values are the same, but for an object's "id" (an
// object is stored under its id, which its data need not repeat).
func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	for _, v := range []any{x, y} {
		if m, ok := v.(map[string]any); ok {
			delete(m, "id")
		}
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// A grant is read and replaced on its own, under the profile's ETag; its problems point into
// the grant.
func TestGrantAPI(t *testing.T) {
	f := newDataFixture(t, nil)
	const coll = "/api/v1/tenants/acme/profiles"
	if code, _, body := f.request("POST", coll, "acme-operator", `{"id":"seo","role":"specialist","tools":["mcp__shop__list"],"grant":{"connectors":["shop"]}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	code, h, body := f.request("GET", coll+"/seo/grant", "acme-viewer", "")
	if code != http.StatusOK || h.Get("ETag") != `"1"` || !jsonEqual(json.RawMessage(body), `{"connectors":["shop"]}`) {
		t.Fatalf("GET grant: %d %q %s", code, h.Get("ETag"), body)
	}
	grant := `{"connectors":["shop","crawl"],"allowance":{"crawl":{"perRun":1,"perDay":2}}}`
	code, h, body = f.request("PUT", coll+"/seo/grant", "acme-operator", grant, "If-Match", `"1"`)
	if code != http.StatusOK || h.Get("ETag") != `"2"` || !jsonEqual(json.RawMessage(body), grant) {
		t.Fatalf("PUT grant: %d %q %s", code, h.Get("ETag"), body)
	}
	// The rest of the profile is as it was.
	_, _, body = f.request("GET", coll+"/seo", "acme-viewer", "")
	if it := decode[item](t, body); !jsonEqual(it.Data, `{"id":"seo","role":"specialist","tools":["mcp__shop__list"],"grant":`+grant+`}`) {
		t.Errorf("the profile after its grant changed: %s", it.Data)
	}
	if code, h, _ := f.request("PUT", coll+"/seo/grant", "acme-operator", grant, "If-Match", `"1"`); code != http.StatusPreconditionFailed || h.Get("ETag") != `"2"` {
		t.Errorf("PUT grant with a stale ETag: %d %q; want 412 with ETag \"2\"", code, h.Get("ETag"))
	}
	code, _, body = f.request("PUT", coll+"/seo/grant", "acme-operator", `{"connectors":["shop","nowhere"]}`, "If-Match", "*")
	if e := decode[errorBody](t, body); code != http.StatusUnprocessableEntity || len(e.Error.Problems) != 1 || e.Error.Problems[0].Field != "/connectors/1" {
		t.Errorf("PUT of a grant naming an unknown connector: %d %s; want 422 at /connectors/1", code, body)
	}
	if code, _, body := f.request("PUT", coll+"/researcher/grant", "admin", grant, "If-Match", "*"); code != http.StatusConflict {
		t.Errorf("PUT of a declared profile's grant: %d %s; want 409", code, body)
	}
}

// A tenant without an egress allowlist has the empty one at revision 0; one is written with
// If-Match "0" and changed with its ETag.
func TestEgressAPI(t *testing.T) {
	f := newDataFixture(t, nil)
	const path = "/api/v1/tenants/acme/egress"
	if code, h, body := f.request("GET", path, "acme-viewer", ""); code != http.StatusOK || h.Get("ETag") != `"0"` || !jsonEqual(json.RawMessage(body), `{"allow":[]}`) {
		t.Fatalf("GET with none: %d %q %s", code, h.Get("ETag"), body)
	}
	allow := `{"allow":["api.example.com","*.shop.example"]}`
	if code, h, body := f.request("PUT", path, "acme-operator", allow, "If-Match", `"0"`); code != http.StatusOK || h.Get("ETag") != `"1"` || !jsonEqual(json.RawMessage(body), allow) {
		t.Fatalf("PUT: %d %q %s", code, h.Get("ETag"), body)
	}
	if code, h, _ := f.request("PUT", path, "acme-operator", allow, "If-Match", `"0"`); code != http.StatusPreconditionFailed || h.Get("ETag") != `"1"` {
		t.Errorf("PUT with If-Match \"0\" over one: %d %q; want 412 with its ETag", code, h.Get("ETag"))
	}
	if code, h, body := f.request("GET", path, "acme-viewer", ""); code != http.StatusOK || h.Get("ETag") != `"1"` || !jsonEqual(json.RawMessage(body), allow) {
		t.Errorf("read back: %d %q %s", code, h.Get("ETag"), body)
	}
	if code, h, body := f.request("GET", "/api/v1/tenants/beta/egress", "beta-viewer", ""); code != http.StatusOK || h.Get("ETag") != `"0"` || !jsonEqual(json.RawMessage(body), `{"allow":[]}`) {
		t.Errorf("beta's, untouched by acme's: %d %q %s", code, h.Get("ETag"), body)
	}
}

// An operator cannot point a connection of its tenant at a credential that is not its
// tenant's: another tenant's variable, Warden's own environment, or a file Warden can read.
// Only its tenant's own prefix is taken.
func TestConnectionSecretIsTheTenants(t *testing.T) {
	f := newDataFixture(t, nil)
	const path = "/api/v1/tenants/acme/connections/acme-steal"
	for _, ref := range []string{"env:WARDEN_SECRET_BETA__SHOP", "env:WARDEN_POSTGRES", "env:HOME", "file:/etc/shadow",
		"file:/proc/self/environ", "env:WARDEN_SECRET_ACME__", "env:warden_secret_acme__x"} {
		body := fmt.Sprintf(`{"connector":"shop","secret":%q}`, ref)
		code, _, raw := f.request("PUT", path, "acme-operator", body, "If-Match", `"0"`)
		if code != http.StatusUnprocessableEntity || !strings.Contains(raw, `"/secret"`) {
			t.Errorf("secret %s: %d %s; want 422 at /secret", ref, code, raw)
		}
	}
	if code, _, raw := f.request("PUT", path, "acme-operator", `{"connector":"shop","secret":"env:WARDEN_SECRET_ACME__SHOP"}`, "If-Match", `"0"`); code != http.StatusCreated {
		t.Errorf("the tenant's own credential: %d %s", code, raw)
	}
}

// A connection is selected by its id or by a unique display name of the caller's tenant, in
// any case; a name two of its connections share selects nothing.
func TestSelectConnectionByName(t *testing.T) {
	f := newDataFixture(t, nil)
	for _, tt := range []struct {
		token, tenant, give string
		want                int
		id                  string
	}{
		{"acme-viewer", "acme", "acme-shop", 200, "acme-shop"},
		{"acme-viewer", "acme", "main store", 200, "acme-shop"},
		{"beta-viewer", "beta", "MAIN STORE", 200, "beta-shop"},
		{"acme-viewer", "acme", "acme-outlet", 200, "acme-outlet"},
		{"acme-viewer", "acme", "OUTLET", 409, ""},
		{"acme-viewer", "acme", "beta-shop", 404, ""},
		{"admin", "acme", "beta-shop", 404, ""},
		{"acme-viewer", "acme", "nothing", 404, ""},
	} {
		code, _, body := f.request("GET", "/api/v1/tenants/"+tt.tenant+"/connections/"+url.PathEscape(tt.give), tt.token, "")
		switch {
		case code != tt.want:
			t.Errorf("%s in %s: %d %s; want %d", tt.give, tt.tenant, code, body, tt.want)
		case code == 200 && decode[item](t, body).ID != tt.id:
			t.Errorf("%s in %s selected %s; want %s", tt.give, tt.tenant, body, tt.id)
		case code == 409 && (!strings.Contains(body, "acme-outlet, acme-outlet2") || decode[errorBody](t, body).Error.Code != "ambiguous"):
			t.Errorf("an ambiguous name: %s; want code ambiguous naming both ids", body)
		}
	}
}

// Discovery lists the connector's tools with whether a profile's grant gives each.
func TestConnectionTools(t *testing.T) {
	f := newDataFixture(t, nil)
	code, _, body := f.request("GET", "/api/v1/tenants/acme/connections/Main%20Store/tools?profile=researcher", "acme-viewer", "")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	got := decode[struct {
		Connection, Connector, Profile string
		Tools                          []struct {
			Name      string
			Grantable bool
			Granted   *bool
			Why       string
		}
	}](t, body)
	granted := map[string]bool{}
	for _, tl := range got.Tools {
		if tl.Granted == nil || tl.Why == "" {
			t.Errorf("%s: granted %v, why %q; want both", tl.Name, tl.Granted, tl.Why)
			continue
		}
		granted[tl.Name] = *tl.Granted
	}
	want := map[string]bool{"mcp__shop__list": true, "mcp__shop__order": false}
	if got.Connection != "acme-shop" || got.Connector != "shop" || fmt.Sprint(granted) != fmt.Sprint(want) {
		t.Errorf("discovery: %s; want %v", body, want)
	}
	if code, _, body := f.request("GET", "/api/v1/tenants/acme/connections/acme-shop/tools", "acme-viewer", ""); code != http.StatusOK || strings.Contains(body, "granted") {
		t.Errorf("without a profile: %d %s; want no granted", code, body)
	}
	if code, _, body := f.request("GET", "/api/v1/tenants/beta/connections/beta-shop/tools?profile=researcher", "beta-viewer", ""); code != http.StatusNotFound {
		t.Errorf("another tenant's profile: %d %s; want 404", code, body)
	}
}

// The allowances show what each profile spent today (UTC): outcomes of calls that ran, of
// this tenant, profile and connector, since midnight.
func TestAllowances(t *testing.T) {
	f := newDataFixture(t, nil)
	ctx := context.Background()
	spend := func(at time.Time, tenant, profile, decision string, amount float64) {
		t.Helper()
		if err := f.db.Append(ctx, &audit.Event{Kind: audit.KindOutcome, Time: at, Tenant: tenant, Profile: profile, Tool: "mcp__crawl__scrape",
			Decision: decision, Spend: &audit.Spend{Connector: "crawl", Unit: "credits", Amount: amount}}); err != nil {
			t.Fatal(err)
		}
	}
	midnight := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	spend(midnight, "acme", "researcher", "allow", 2)
	spend(dataNow.Add(-time.Hour), "acme", "researcher", "allow", 1.5)
	spend(midnight.Add(-time.Second), "acme", "researcher", "allow", 100) // yesterday
	spend(dataNow, "acme", "researcher", "deny", 100)                     // never ran
	spend(dataNow, "beta", "researcher", "allow", 100)                    // another tenant
	spend(dataNow, "acme", "other", "allow", 100)                         // another profile

	code, _, body := f.request("GET", "/api/v1/tenants/acme/allowances", "acme-viewer", "")
	got := decode[struct {
		Day        string
		Allowances []map[string]any
	}](t, body)
	want := `[map[connector:crawl perDay:20 perRun:5 profile:researcher spentToday:3.5 unit:credits]]`
	if code != http.StatusOK || got.Day != "2026-12-02" || fmt.Sprint(got.Allowances) != want {
		t.Errorf("%d %s; want day 2026-12-02 and %s", code, body, want)
	}
	if code, _, body := f.request("GET", "/api/v1/tenants/acme/allowances", "beta-viewer", ""); code != http.StatusNotFound {
		t.Errorf("another tenant's allowances: %d %s; want 404", code, body)
	}
}

// A list pages with a cursor: 25 objects and the policy file's in pages of at most 10, each
// once, in id order.
func TestListPaging(t *testing.T) {
	f := newDataFixture(t, nil)
	for i := range 25 {
		body := fmt.Sprintf(`{"id":"c-%02d","connector":"shop","name":"Store %d","enabled":false}`, i, i)
		if code, _, raw := f.request("POST", "/api/v1/tenants/acme/connections", "acme-operator", body); code != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, code, raw)
		}
	}
	var ids []string
	pages := 0
	for after := ""; ; pages++ {
		if pages > 5 {
			t.Fatalf("more pages than 28 objects need: %v", ids)
		}
		code, _, body := f.request("GET", "/api/v1/tenants/acme/connections?limit=10&after="+url.QueryEscape(after), "acme-viewer", "")
		page := decode[struct {
			Items []item
			Next  string
		}](t, body)
		if code != http.StatusOK || len(page.Items) > 10 {
			t.Fatalf("page %d: %d %s", pages, code, body)
		}
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	want := []string{"acme-outlet", "acme-outlet2", "acme-shop"}
	for i := range 25 {
		want = append(want, fmt.Sprintf("c-%02d", i))
	}
	if !slices.Equal(ids, want) {
		t.Errorf("paged ids %v; want %v", ids, want)
	}
	if code, _, _ := f.request("GET", "/api/v1/tenants/acme/connections?limit=1001", "acme-viewer", ""); code != http.StatusBadRequest {
		t.Errorf("limit 1001: %d; want 400", code)
	}
}

// Tenants: a non-admin lists its own only; only an admin creates one.
func TestTenantsAPI(t *testing.T) {
	f := newDataFixture(t, nil)
	code, _, body := f.request("GET", "/api/v1/tenants", "acme-viewer", "")
	page := decode[struct{ Items []item }](t, body)
	if code != http.StatusOK || len(page.Items) != 1 || page.Items[0].ID != "acme" {
		t.Errorf("acme's viewer lists tenants: %d %s; want acme only", code, body)
	}
	if code, _, body := f.request("GET", "/api/v1/tenants", "admin", ""); code != http.StatusOK || len(decode[struct{ Items []item }](t, body).Items) != 2 {
		t.Errorf("the admin lists tenants: %d %s; want both", code, body)
	}
	code, h, body := f.request("POST", "/api/v1/tenants", "admin", `{"id":"gamma","name":"Gamma"}`)
	if code != http.StatusCreated || h.Get("Location") != "/api/v1/tenants/gamma" {
		t.Fatalf("create a tenant: %d %q %s", code, h.Get("Location"), body)
	}
	if code, _, _ := f.request("POST", "/api/v1/tenants", "acme-operator", `{"id":"delta"}`); code != http.StatusForbidden {
		t.Errorf("an operator creating a tenant: %d; want 403", code)
	}
	if code, _, _ := f.request("GET", "/api/v1/tenants/gamma", "acme-operator", ""); code != http.StatusNotFound {
		t.Errorf("acme's operator reading gamma: %d; want 404", code)
	}
	if code, _, _ := f.request("DELETE", "/api/v1/tenants/acme", "admin", "", "If-Match", "*"); code != http.StatusConflict {
		t.Errorf("deleting a declared tenant: %d; want 409", code)
	}
	if code, _, body := f.request("DELETE", "/api/v1/tenants/gamma", "admin", "", "If-Match", `"1"`); code != http.StatusNoContent {
		t.Errorf("deleting gamma: %d %s; want 204", code, body)
	}
}

// Without management data the routes are 404, and say why.
func TestNoData(t *testing.T) {
	f := newFixture(t)
	code, _, body := f.request("GET", "/api/v1/tenants", "admin", "")
	if code != http.StatusNotFound || !strings.Contains(body, "management data") {
		t.Errorf("%d %s; want 404 saying there is no management data", code, body)
	}
}

// newTestData is the management data of a test server: manage.Service over the policy of
// dataPolicy, recording its changes in the fixture's audit trail.
func newTestData(t *testing.T, db *sqlite.DB) server.Data {
	t.Helper()
	svc, err := manage.New(context.Background(), manage.Options{Store: db, Log: db, Name: "warden.yaml", Data: []byte(dataPolicy)})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
