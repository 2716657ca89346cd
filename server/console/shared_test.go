package console_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/server/console"
	"github.com/wardenhq/warden/server/console/consolesession"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
)

// sharedStore is what an instance of the shared rig needs of its store.
type sharedStore interface {
	server.Store
	consolesession.Store
}

// shared is two instances, A and B, each its own API and console on its own handle of one store,
// as two `warden serve` processes behind a load balancer are; one fake clock tells both the time.
type shared struct {
	t      *testing.T
	clock  *clock.Fake
	a, b   *httptest.Server
	db     sharedStore // instance A's handle
	tokens map[string]string
	// raw is everything the store holds of the console's sessions, as text.
	raw func() []byte
}

// newShared starts A and B on the store open opens (called twice, a handle each).
func newShared(t *testing.T, open func() sharedStore, raw func() []byte) *shared {
	t.Helper()
	s := &shared{t: t, clock: clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)), tokens: map[string]string{}, raw: raw}
	start := func() (*httptest.Server, sharedStore) {
		db := open()
		o := server.Options{Store: db, Broker: approval.NewBroker(approval.Options{Store: db}), Cards: &server.CardFeed{}}
		c, err := console.New(console.Options{API: server.New(o), Clock: s.clock, Sessions: db, MaxSessions: 3})
		if err != nil {
			t.Fatal(err)
		}
		o.Console = c
		srv := httptest.NewServer(server.New(o))
		t.Cleanup(srv.Close)
		return srv, db
	}
	s.a, s.db = start()
	s.b, _ = start()
	for _, name := range []string{"approver", "viewer", "viewer2", "viewer3"} {
		secret, hash, err := auth.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		role := auth.RoleViewer
		if name == "approver" {
			role = auth.RoleApprover
		}
		if err := s.db.CreateToken(context.Background(), &auth.Token{ID: "tok-" + name, Hash: hash, Role: role, Tenant: "acme",
			Name: name, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		s.tokens[name] = secret
	}
	return s
}

// visitor is one browser: its session cookie, sent to whichever instance it asks.
type visitor struct {
	s      *shared
	cookie string
}

// do sends a request to an instance with the visitor's cookie, and returns the status, the
// body and the CSRF token of the page's first form.
func (v *visitor) do(srv *httptest.Server, method, path string, form url.Values) (int, string, string) {
	v.s.t.Helper()
	var body io.Reader = http.NoBody
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		v.s.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
	}
	if v.cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: v.cookie})
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		v.s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			v.cookie = c.Value
		}
	}
	csrf := ""
	if m := csrfField.FindStringSubmatch(string(raw)); m != nil {
		csrf = m[1]
	}
	return resp.StatusCode, string(raw), csrf
}

// signIn signs a new visitor in on an instance with a token.
func (s *shared) signIn(srv *httptest.Server, token string) *visitor {
	s.t.Helper()
	return &visitor{s: s, cookie: signInOn(s.t, srv, s.tokens[token])}
}

// signInOn signs in on a console with a token's secret, as a browser does (the form's CSRF
// token from its cookie), and returns the session cookie's value.
func signInOn(tb testing.TB, srv *httptest.Server, secret string) string {
	tb.Helper()
	b := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := b.Get(srv.URL + "/signin")
	if err != nil {
		tb.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindStringSubmatch(string(raw))
	if m == nil {
		tb.Fatal("the sign-in page has no CSRF token")
	}
	form := url.Values{"csrf": {m[1]}, "token": {secret}}
	req, _ := http.NewRequest("POST", srv.URL+"/signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	resp, err = b.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	cookie := ""
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			cookie = c.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == "" {
		tb.Fatalf("sign in on %s: %d\n%s", srv.URL, resp.StatusCode, raw)
	}
	return cookie
}

// signedIn reports whether an instance serves the visitor a page (else it sends it to sign in).
func (v *visitor) signedIn(srv *httptest.Server) bool {
	v.s.t.Helper()
	code, body, _ := v.do(srv, "GET", "/inbox", nil)
	switch code {
	case http.StatusOK:
		return true
	case http.StatusSeeOther:
		return false
	}
	v.s.t.Fatalf("the inbox: %d\n%s", code, body)
	return false
}

// testShared: a person signed in on A is served by B, forms included; signed out on B, A
// refuses the session; a revoked token is refused on both; idle and the bound are the store's.
func testShared(t *testing.T, s *shared) {
	ctx := context.Background()
	card := &approval.Card{ID: "card-1", Tenant: "acme", Session: "s", Tool: "mcp__sheets__sheets_append", Digest: "d1",
		PolicyRevision: "rev1", Reason: "asks", State: approval.Pending, Created: time.Now(), Deadline: time.Now().Add(time.Hour)}
	if err := s.db.CreateCard(ctx, card); err != nil {
		t.Fatal(err)
	}

	// Signed in on A, browsing and answering on B.
	v := s.signIn(s.a, "approver")
	code, body, csrfB := v.do(s.b, "GET", "/inbox", nil)
	if code != http.StatusOK || !strings.Contains(body, "card-1") || csrfB == "" {
		t.Fatalf("B's inbox for a session signed in on A: %d\n%s", code, body)
	}
	if _, _, csrfA := v.do(s.a, "GET", "/inbox", nil); csrfA != csrfB {
		t.Errorf("the session's CSRF token on A %q, on B %q; want one token", csrfA, csrfB)
	}
	if code, _, _ := v.do(s.b, "POST", "/inbox/card-1", url.Values{"csrf": {"x" + csrfB[1:]}, "answer": {"allow_once"}, "digest": {"d1"}}); code != http.StatusForbidden {
		t.Errorf("B, a form with a wrong CSRF token: %d; want 403", code)
	}
	if code, body, _ := v.do(s.b, "POST", "/inbox/card-1", url.Values{"csrf": {csrfB}, "answer": {"allow_once"}, "digest": {"d1"}}); code != http.StatusSeeOther {
		t.Fatalf("B, answering the card: %d\n%s", code, body)
	}
	if c, err := s.db.Card(ctx, "acme", "card-1"); err != nil || c.State != approval.Allowed || c.Approver == "" {
		t.Errorf("the card after B's answer: %+v, %v; want allowed, with its approver", c, err)
	}

	// Nothing in the store would let its reader act as the person: neither the cookie's id
	// nor the token's secret.
	raw := s.raw()
	if !bytes.Contains(raw, []byte(consolesession.HashID(v.cookie))) {
		t.Fatalf("the store's console sessions do not hold the session's hash:\n%s", raw)
	}
	for what, secret := range map[string]string{"the cookie's id": v.cookie, "the token's secret": s.tokens["approver"]} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the store holds %s", what)
		}
	}

	// A stream on A ends when the session is signed out on B.
	stream := v.openStream(s.a)
	_, _, csrfB = v.do(s.b, "GET", "/inbox", nil)
	if code, _, _ := v.do(s.b, "POST", "/signout", url.Values{"csrf": {csrfB}}); code != http.StatusSeeOther {
		t.Fatalf("sign out on B: %d", code)
	}
	for _, srv := range []*httptest.Server{s.a, s.b} {
		if v.signedIn(srv) {
			t.Errorf("%s still serves a session signed out on B", srv.URL)
		}
	}
	if code, _, _ := v.do(s.a, "POST", "/inbox/card-1", url.Values{"csrf": {csrfB}, "answer": {"deny"}, "digest": {"d1"}}); code != http.StatusForbidden {
		t.Errorf("A, a form of a session signed out on B: %d; want 403", code)
	}
	s.clock.Advance(10 * time.Second) // the stream's next look at the store
	if !ends(stream) {
		t.Error("A's stream did not end when the session was signed out on B")
	}

	// A revoked token's session is refused on both, pages and forms.
	v = s.signIn(s.b, "viewer")
	_, _, csrf := v.do(s.a, "GET", "/try", nil)
	if err := s.db.RevokeToken(ctx, "tok-viewer", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*httptest.Server{s.a, s.b} {
		if v.signedIn(srv) {
			t.Errorf("%s serves the session of a revoked token", srv.URL)
		}
		if code, _, _ := v.do(srv, "POST", "/try", url.Values{"csrf": {csrf}, "tool": {"files_read"}, "input": {"{}"}}); code != http.StatusForbidden {
			t.Errorf("%s, a form of a revoked token's session: %d; want 403", srv.URL, code)
		}
	}

	// Idle 30 minutes, measured from the last use on either instance.
	v = s.signIn(s.a, "viewer2")
	s.clock.Advance(29 * time.Minute)
	if !v.signedIn(s.b) {
		t.Fatal("B signed the session out after 29 idle minutes; the idle timeout is 30")
	}
	s.clock.Advance(29 * time.Minute)
	if !v.signedIn(s.a) {
		t.Fatal("A signed the session out 29 minutes after its use on B")
	}
	s.clock.Advance(30 * time.Minute)
	for _, srv := range []*httptest.Server{s.b, s.a} {
		if v.signedIn(srv) {
			t.Errorf("%s serves a session idle 30 minutes", srv.URL)
		}
	}

	// At most 3 sessions live in the store, whichever instance signed them in: the one unused
	// longest ends.
	var vs []*visitor
	for i, srv := range []*httptest.Server{s.a, s.b, s.a} {
		vs = append(vs, s.signIn(srv, "viewer2"))
		s.clock.Advance(time.Duration(i+1) * time.Second)
	}
	if !vs[0].signedIn(s.b) { // the first is now the one used last
		t.Fatal("the first of three sessions ended")
	}
	vs = append(vs, s.signIn(s.b, "viewer3"))
	for i, want := range []bool{true, false, true, true} {
		if got := vs[i].signedIn(s.a); got != want {
			t.Errorf("session %d of 4 live on A: %v; want %v (the bound is 3, the second unused longest)", i, got, want)
		}
	}
}

// openStream opens the inbox's event stream on an instance and returns its body, past the
// first line, once the console watches the session.
func (v *visitor) openStream(srv *httptest.Server) io.ReadCloser {
	v.s.t.Helper()
	before := v.s.clock.Waiters()
	req, _ := http.NewRequest("GET", srv.URL+console.EventsPath, nil)
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: v.cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		v.s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		v.s.t.Fatalf("the event stream: %d", resp.StatusCode)
	}
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		v.s.t.Fatal(err)
	}
	for v.s.clock.Waiters() <= before { // the stream's watch of its session is waiting
		runtime.Gosched()
	}
	return resp.Body
}

// TestSharedSessionsSQLite: two instances on one SQLite file.
func TestSharedSessionsSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	open := func() sharedStore {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	// Everything on disk: the file and its write-ahead log.
	raw := func() []byte {
		var all []byte
		for _, p := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(p)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	testShared(t, newShared(t, open, raw))
}

// TestSharedSessionsPostgres: two instances on one PostgreSQL schema.
func TestSharedSessionsPostgres(t *testing.T) {
	base := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set")
	}
	schema := "warden_test_console_" + strings.ToLower(auth.NewID())
	// query runs one statement on a connection of its own, and returns its text answer, if any.
	query := func(sql string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer rows.Close()
		var out []byte
		for rows.Next() {
			var text *string
			if err := rows.Scan(&text); err != nil {
				t.Fatal(err)
			}
			if text != nil {
				out = append(out, *text...)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return out
	}
	id := pgx.Identifier{schema}.Sanitize()
	query("CREATE SCHEMA " + id)
	t.Cleanup(func() { query("DROP SCHEMA " + id + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	open := func() sharedStore {
		db, err := postgres.Open(context.Background(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	raw := func() []byte { return query("SELECT string_agg(s::text, ' ') FROM " + id + ".console_sessions s") }
	testShared(t, newShared(t, open, raw))
}

// hashOnly is a store that finds tokens only by their secret's hash: the API cannot act as a
// token by its id.
type hashOnly struct{ server.Store }

// TestSharedSessionsNeedTokensByID: a console keeping its sessions in a store whose API cannot
// act as a token by its id refuses to sign in, and keeps no session.
func TestSharedSessionsNeedTokensByID(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secret, hash, _ := auth.NewSecret()
	if err := db.CreateToken(context.Background(), &auth.Token{ID: "tok-viewer", Hash: hash, Role: auth.RoleViewer, Tenant: "acme", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	o := server.Options{Store: hashOnly{db}, Broker: approval.NewBroker(approval.Options{Store: db})}
	c, err := console.New(console.Options{API: server.New(o), Sessions: db})
	if err != nil {
		t.Fatal(err)
	}
	o.Console = c
	srv := httptest.NewServer(server.New(o))
	defer srv.Close()
	r := &rig{t: t, srv: srv}
	b := r.browser()
	_, _, csrf := r.page(b, "/signin")
	resp := r.post(b, "/signin", url.Values{"csrf": {csrf}, "token": {secret}}, srv.URL)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("sign in through an API that cannot act by id: %d; want 401", resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == console.CookieName && ck.Value != "" {
			t.Errorf("a session cookie was set: %+v", ck)
		}
	}
	if code, _, _ := r.page(b, "/inbox"); code != http.StatusSeeOther {
		t.Errorf("the inbox after the refused sign-in: %d; want a redirect to sign in", code)
	}
}
