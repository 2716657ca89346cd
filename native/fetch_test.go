package native_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wardenhq/warden/native"
)

func TestNetFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte("hello from the server"))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"a":1}`))
		case "/long":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(strings.Repeat("<p>x</p>", 100)))
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
		case "/redirect":
			http.Redirect(w, r, "/text", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ws, e := workspace(t, native.Options{Fetch: srv.Client(), MaxRead: 64})
	tests := []struct {
		name    string
		url     string
		isError bool
		want    []string
	}{
		{"text", srv.URL + "/text", false, []string{"HTTP 200 OK", "hello from the server"}},
		{"json", srv.URL + "/json", false, []string{`{"a":1}`}},
		{"a redirect is followed", srv.URL + "/redirect", false, []string{"hello from the server", "/text"}},
		{"truncated", srv.URL + "/long", false, []string{"<p>x</p>", "[truncated: the first 64 bytes are shown]"}},
		{"binary", srv.URL + "/image", false, []string{"[binary content (image/png), 10 bytes; not shown]"}},
		{"not found", srv.URL + "/missing", true, []string{"HTTP 404 Not Found"}},
		{"another scheme", "ftp://example.com/x", true, []string{`http and https URLs only, not "ftp"`}},
		{"a file URL", "file:///etc/passwd", true, []string{`not "file"`}},
		{"no host", "http:///x", true, []string{"names no host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, e, ws, "net_fetch", map[string]any{"url": tt.url})
			want(t, r, tt.isError, tt.want...)
			if strings.Contains(r.Text, "PNG") {
				t.Errorf("binary bytes in the text: %q", r.Text)
			}
		})
	}
	ws2, noEgress := workspace(t, native.Options{})
	want(t, call(t, noEgress, ws2, "net_fetch", map[string]any{"url": srv.URL + "/text"}), true, "no egress configured")
}
