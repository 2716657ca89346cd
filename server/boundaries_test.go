package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
)

// storedBoundaries is server.Boundaries over a store, as the gateway provides it (the gateway's
// own tests cover live sessions and the audit trail).
type storedBoundaries struct {
	db *sqlite.DB
	t  *boundary.Tenants
}

func (b storedBoundaries) StoredBoundaries(ctx context.Context, tenant string) (*boundary.Stored, error) {
	return b.db.Boundaries(ctx, tenant)
}

func (b storedBoundaries) PutBoundaries(ctx context.Context, tenant string, data []byte, rev int64, who string) (*boundary.Stored, error) {
	return b.t.Put(ctx, tenant, data, rev, who, time.Now())
}

func (b storedBoundaries) KnowsTenant(tenant string) bool {
	return tenant == "acme" || tenant == "beta"
}

// request sends a request with headers and returns the status, the headers and the body.
func (f *fixture) request(method, path, token, body string, headers ...string) (int, http.Header, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.tokens[token])
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

const plans = `{"version":1,"hardBlocks":[{"id":"no-plans","enabled":true,"type":"path","pattern":"**/plans.txt","match":"glob","operations":["read"]}]}`

func TestBoundariesAPI(t *testing.T) {
	f := newFixtureWith(t, func(o *server.Options, db *sqlite.DB) {
		o.Boundaries = storedBoundaries{db: db, t: boundary.NewTenants(boundary.TenantsOptions{Store: db})}
	})
	const path = "/api/v1/tenants/acme/boundaries"

	// A tenant with no document has the empty one, revision 0.
	code, h, body := f.request("GET", path, "acme-viewer", "")
	if code != http.StatusOK || h.Get("ETag") != `"0"` || body != `{"version":1,"hardBlocks":[]}` {
		t.Fatalf("GET with nothing stored: %d %q %s", code, h.Get("ETag"), body)
	}

	// Writes need If-Match, and an admin.
	if code, _, body := f.request("PUT", path, "admin", plans); code != http.StatusPreconditionRequired || !strings.Contains(body, "precondition_required") {
		t.Errorf("PUT without If-Match: %d %s; want 428", code, body)
	}
	if code, _, body := f.request("PUT", path, "admin", plans, "If-Match", "3"); code != http.StatusBadRequest {
		t.Errorf("PUT with an unquoted If-Match: %d %s; want 400", code, body)
	}
	if code, _, _ := f.request("PUT", path, "acme-viewer", plans, "If-Match", `"0"`); code != http.StatusForbidden {
		t.Errorf("a viewer's PUT: %d; want 403", code)
	}

	code, h, body = f.request("PUT", path, "admin", plans, "If-Match", `"0"`)
	if code != http.StatusOK || h.Get("ETag") != `"1"` || body != plans {
		t.Fatalf("the first PUT: %d %q %s", code, h.Get("ETag"), body)
	}
	code, h, body = f.request("GET", path, "acme-viewer", "")
	if code != http.StatusOK || h.Get("ETag") != `"1"` || body != plans {
		t.Errorf("GET after the PUT: %d %q %s", code, h.Get("ETag"), body)
	}

	// A stale editor gets 412 and the current ETag; nothing changes.
	code, h, body = f.request("PUT", path, "admin", `{"version":1,"hardBlocks":[]}`, "If-Match", `"0"`)
	if code != http.StatusPreconditionFailed || h.Get("ETag") != `"1"` || !strings.Contains(body, `"stale"`) {
		t.Errorf("a stale PUT: %d %q %s; want 412 with ETag \"1\"", code, h.Get("ETag"), body)
	}

	// A document with errors: 422 with every field error, as boundary.Parse reports them.
	code, _, body = f.request("PUT", path, "admin",
		`{"version":2,"hardBlocks":[{"id":"x","type":"path","pattern":"/a","match":"fuzzy","operations":["read","chew"]}]}`, "If-Match", `"1"`)
	var out struct {
		Error struct {
			Code   string
			Fields []struct{ Field, Message string }
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != http.StatusUnprocessableEntity || out.Error.Code != "invalid_boundaries" {
		t.Fatalf("an invalid PUT: %d %s; want 422 invalid_boundaries", code, body)
	}
	var fields []string
	for _, fe := range out.Error.Fields {
		fields = append(fields, fe.Field)
	}
	want := []string{"version", "hardBlocks[0].enabled", "hardBlocks[0].match", "hardBlocks[0].operations[1]"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("the field errors name %v; want %v", fields, want)
	}
	if _, h, _ := f.request("GET", path, "admin", ""); h.Get("ETag") != `"1"` {
		t.Errorf("an invalid PUT changed the revision to %s", h.Get("ETag"))
	}

	// * replaces whatever is there.
	if code, h, _ := f.request("PUT", path, "admin", `{"version":1,"hardBlocks":[]}`, "If-Match", "*"); code != http.StatusOK || h.Get("ETag") != `"2"` {
		t.Errorf("PUT with If-Match *: %d %q", code, h.Get("ETag"))
	}

	// Another tenant's document, or a tenant the policy does not name, is 404.
	for _, tt := range []struct{ token, path string }{
		{"acme-viewer", "/api/v1/tenants/beta/boundaries"},
		{"admin", "/api/v1/tenants/nobody/boundaries"},
	} {
		if code, _, _ := f.request("GET", tt.path, tt.token, ""); code != http.StatusNotFound {
			t.Errorf("%s GET %s: %d; want 404", tt.token, tt.path, code)
		}
	}
	if code, _, _ := f.request("GET", path, "beta-approver", ""); code != http.StatusForbidden {
		t.Errorf("an approver's GET: %d; want 403", code)
	}
}
