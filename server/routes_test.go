package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
)

// Every error of the API is JSON: a method a path does not take is a 405 with an Allow header,
// and a path the server does not serve a 404, both in the error shape.
func TestErrorsAreJSON(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		method, path string
		want         int
		allow        string
	}{
		{"DELETE", "/api/v1/tokens", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{"POST", "/api/v1/audit", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"PATCH", "/api/v1/tenants/acme/boundaries", http.StatusMethodNotAllowed, "GET, HEAD, PUT"},
		{"PATCH", "/api/v1/tenants/acme/profiles/p", http.StatusMethodNotAllowed, "DELETE, GET, HEAD, PUT"},
		{"DELETE", "/api/v1/tenants/acme/egress", http.StatusMethodNotAllowed, "GET, HEAD, PUT"},
		{"GET", "/api/v1/unknown", http.StatusNotFound, ""},
		{"GET", "/api/v1/runs/r1/usage/more", http.StatusNotFound, ""},
		{"GET", "/", http.StatusNotFound, ""},
	} {
		req, err := http.NewRequest(tt.method, f.srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+f.tokens["admin"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct {
			Error struct{ Code, Message string }
		}
		err = json.Unmarshal(raw, &body)
		if resp.StatusCode != tt.want || err != nil || body.Error.Code == "" || !strings.Contains(body.Error.Message, tt.path) ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d %s %q, Allow %q; want %d with the JSON error shape naming the path, Allow %q",
				tt.method, tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), raw, resp.Header.Get("Allow"), tt.want, tt.allow)
		}
	}
}

// With a console, every path outside the API, health, readiness and metrics is the console's;
// the API's own paths keep their JSON 404 and 405.
func TestConsoleTakesOtherPaths(t *testing.T) {
	f := newFixtureWith(t, func(o *server.Options, _ *sqlite.DB) {
		o.Console = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "console") })
	})
	for _, tt := range []struct {
		method, path string
		want         int
		console      bool
	}{
		{"GET", "/", 200, true},
		{"POST", "/approvals", 200, true},
		{"GET", "/apix", 200, true},
		{"GET", "/api/v1/unknown", 404, false},
		{"GET", "/api", 404, false},
		{"POST", "/healthz", 405, false},
	} {
		code, _, body := f.request(tt.method, tt.path, "admin", "")
		if code != tt.want || (body == "console") != tt.console {
			t.Errorf("%s %s: %d %q; want %d from the console: %v", tt.method, tt.path, code, body, tt.want, tt.console)
		}
	}
}
