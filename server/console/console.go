// Package console is Warden's web console, served by `warden serve` at /: sign in with an API
// token, then the approvals inbox (live by server-sent events), the surface explorer, the
// audit view with its charts, the hard-block editor, "try a call", and editors for a tenant's
// connections, profiles, grants and egress allowlist.
//
// The console reads no record of the store but its own sessions: every page calls the REST API
// in process as the signed-in person's token, so roles, tenant isolation and validation are
// exactly the API's. Pages are server-rendered html/template forms that work without script; a
// small script of our own adds the live inbox and the deadline countdown. A session is a random
// id in an HttpOnly, SameSite=Strict cookie. With a store of sessions (Options.Sessions, which
// warden serve gives it), the store keeps the id's hash and the token's id, never its secret,
// and every instance on the store serves every session, calling the API as the token by its id
// (server.ActAs); without one, the session and the token's secret stay in this process's
// memory. Every POST carries the session's CSRF token and, when the browser sends one, an
// Origin of this host.
package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/server/console/consolesession"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configures a Console. The zero value of every field but API is a default.
type Options struct {
	// API is the REST API the pages call (server.Server).
	API http.Handler
	// Clock defaults to the real one (sessions expire by it).
	Clock  clock.Clock
	Logger *slog.Logger
	// IdleTimeout ends a session unused this long (default 30 min); MaxAge ends any session
	// this long after sign-in (default 12 h); MaxSessions bounds the sessions held (default
	// 10,000: past it the one unused longest is ended).
	IdleTimeout, MaxAge time.Duration
	MaxSessions         int
	// Sessions keeps the sessions where every instance on the same store finds them: any
	// instance serves any session, and MaxSessions bounds the sessions of the store. The API
	// must then find tokens by id (its store a server.TokenFinder). Nil keeps them in this
	// process's memory, with the token's secret, for this instance alone.
	Sessions consolesession.Store
}

// Console serves the web console. It is safe for concurrent use.
type Console struct {
	o        Options
	mux      *http.ServeMux
	pages    map[string]*template.Template
	sessions keeper
}

// EventsPath is the console's event stream, which stays open as long as its page: the server's
// per-request write deadline must not apply to it.
const EventsPath = "/inbox/events"

// New returns a Console.
func New(o Options) (*Console, error) {
	if o.API == nil {
		return nil, fmt.Errorf("console: no API to call")
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 12 * time.Hour
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10000
	}
	c := &Console{o: o, mux: http.NewServeMux(), pages: map[string]*template.Template{}}
	if o.Sessions != nil {
		c.sessions = newStored(o.Sessions, o.Clock, o.IdleTimeout, o.MaxAge, o.MaxSessions)
	} else {
		c.sessions = memory{newSessions(o.Clock, o.IdleTimeout, o.MaxAge, o.MaxSessions)}
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		c.pages[base] = t
	}
	static, _ := fs.Sub(staticFS, "static")
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.routes()
	return c, nil
}

// ServeHTTP serves a page.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	c.mux.ServeHTTP(w, r)
}

// apiResult is an answer of the API.
type apiResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// decode reads the body as JSON into v.
func (a *apiResult) decode(v any) error { return json.Unmarshal(a.Body, v) }

// errorMessage is the API's error message, or a line about the status.
func (a *apiResult) errorMessage() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	if json.Unmarshal(a.Body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return fmt.Sprintf("the API answered %d", a.Status)
}

// call calls the API in process as the session's token.
func (c *Console) call(ctx context.Context, s *session, method, path string, body []byte, header ...string) *apiResult {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "bad_request", "message": err.Error()}})
		return &apiResult{Status: http.StatusBadRequest, Body: body}
	}
	req.RequestURI = path
	req.ContentLength = int64(len(body))
	req = s.as(req)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := &recorder{header: http.Header{}}
	c.o.API.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &apiResult{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
}

// as makes req act as the session's token: by its secret, held in memory, or else by its id,
// in process (server.ActAs). A session with neither is refused by the API.
func (s *session) as(req *http.Request) *http.Request {
	if s.secret != "" {
		req.Header.Set("Authorization", "Bearer "+s.secret)
		return req
	}
	return req.WithContext(server.ActAs(req.Context(), s.tokenID))
}

// recorder keeps an in-process answer of the API.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// page is what every template gets.
type page struct {
	Title  string
	Nav    string
	User   *sessionView
	CSRF   string
	Tenant string
	Error  string
	Notice string
	Data   any
}

func (c *Console) render(w http.ResponseWriter, status int, name string, p *page) {
	t := c.pages[name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		c.o.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

var funcs = template.FuncMap{
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return ""
		}
		return string(b)
	},
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"clock":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"join":    strings.Join,
	"cardData": func(p *page, c any) map[string]any {
		out := map[string]any{"CSRF": p.CSRF, "Card": nil, "Answer": p.User.May("answer")}
		if cv, ok := c.(cardView); ok {
			out["Card"] = cv
		}
		return out
	},
	"deletePath": func(p string) string {
		path, query, _ := strings.Cut(p, "?")
		return path + "/delete?" + query
	},
}
