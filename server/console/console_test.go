package console_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/server/console"
	"github.com/wardenhq/warden/store/sqlite"
)

// rig is the real API on SQLite with the console mounted, and a token of each kind.
type rig struct {
	t      *testing.T
	srv    *httptest.Server
	clock  *clock.Fake
	tokens map[string]string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &rig{t: t, clock: clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)), tokens: map[string]string{}}
	o := server.Options{Store: db, Broker: approval.NewBroker(approval.Options{Store: db}), Cards: &server.CardFeed{}}
	api := server.New(o)
	c, err := console.New(console.Options{API: api, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	o.Console = c
	r.srv = httptest.NewServer(server.New(o))
	t.Cleanup(r.srv.Close)
	for _, tk := range []struct{ name, role, tenant string }{
		{"viewer", auth.RoleViewer, "acme"}, {"agent", auth.RoleAgent, "acme"}, {"approver", auth.RoleApprover, "acme"},
	} {
		secret, hash, err := auth.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CreateToken(context.Background(), &auth.Token{ID: "tok-" + tk.name, Hash: hash, Role: tk.role, Tenant: tk.tenant, SessionRole: "person", Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		r.tokens[tk.name] = secret
	}
	return r
}

// browser is a client with a cookie jar that does not follow redirects.
func (r *rig) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// page gets a page and returns its status, body and the CSRF token of its first form.
func (r *rig) page(b *http.Client, path string) (int, string, string) {
	r.t.Helper()
	resp, err := b.Get(r.srv.URL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	m := csrfField.FindStringSubmatch(string(raw))
	if m == nil {
		return resp.StatusCode, string(raw), ""
	}
	return resp.StatusCode, string(raw), m[1]
}

func (r *rig) post(b *http.Client, path string, form url.Values, origin string) *http.Response {
	r.t.Helper()
	req, err := http.NewRequest("POST", r.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := b.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// signIn signs a browser in with a token and returns the session cookie as set.
func (r *rig) signIn(b *http.Client, token string) *http.Cookie {
	r.t.Helper()
	_, _, csrf := r.page(b, "/signin")
	resp := r.post(b, "/signin", url.Values{"csrf": {csrf}, "token": {token}, "tenant": {"acme"}}, r.srv.URL)
	if resp.StatusCode != http.StatusSeeOther {
		r.t.Fatalf("sign in: %d", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			return c
		}
	}
	r.t.Fatal("sign in set no session cookie")
	return nil
}

func TestSignInCookie(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	if code, _, _ := r.page(b, "/inbox"); code != http.StatusSeeOther {
		t.Errorf("the inbox before sign-in: %d; want a redirect to sign in", code)
	}
	ck := r.signIn(b, r.tokens["viewer"])
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure || len(ck.Value) < 40 {
		t.Errorf("the session cookie: %+v; want HttpOnly, SameSite=Strict, Path=/, a long random value (not Secure over plain HTTP)", ck)
	}
	if code, body, _ := r.page(b, "/inbox"); code != http.StatusOK || !strings.Contains(body, "Nothing is waiting") {
		t.Errorf("the inbox after sign-in: %d %s", code, body)
	}
	// An agent token is for /mcp only; a wrong one is refused.
	for _, tok := range []string{r.tokens["agent"], "wrd_nonsense"} {
		b2 := r.browser()
		_, _, csrf := r.page(b2, "/signin")
		if resp := r.post(b2, "/signin", url.Values{"csrf": {csrf}, "token": {tok}}, ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("sign in with a token that may not: %d; want 401", resp.StatusCode)
		}
	}
}

func TestCSRFRefused(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	r.signIn(b, r.tokens["viewer"])
	_, _, csrf := r.page(b, "/try")
	if csrf == "" {
		t.Fatal("the try page has no CSRF token")
	}
	form := func(tok string) url.Values {
		return url.Values{"csrf": {tok}, "tool": {"files_read"}, "input": {"{}"}, "role": {"person"}}
	}
	for _, tt := range []struct {
		name   string
		form   url.Values
		origin string
		want   int
	}{
		{"no token", url.Values{"tool": {"files_read"}}, "", http.StatusForbidden},
		{"a wrong token", form("x" + csrf[1:]), "", http.StatusForbidden},
		{"another site", form(csrf), "https://evil.example", http.StatusForbidden},
		{"this page", form(csrf), r.srv.URL, http.StatusOK},
	} {
		if resp := r.post(b, "/try", tt.form, tt.origin); resp.StatusCode != tt.want {
			t.Errorf("%s: %d; want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	// The sign-in form is checked the same way.
	b2 := r.browser()
	r.page(b2, "/signin")
	if resp := r.post(b2, "/signin", url.Values{"token": {r.tokens["viewer"]}}, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign in without the form's token: %d; want 403", resp.StatusCode)
	}
}

func TestSessionExpiry(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	r.signIn(b, r.tokens["viewer"])
	signedIn := func() bool {
		code, _, _ := r.page(b, "/audit")
		return code == http.StatusOK
	}
	r.clock.Advance(29 * time.Minute)
	if !signedIn() {
		t.Fatal("signed out after 29 idle minutes; the idle timeout is 30")
	}
	r.clock.Advance(30 * time.Minute)
	if signedIn() {
		t.Error("still signed in after 30 idle minutes")
	}
	// Used every 20 minutes, a session still ends 12 hours after sign-in.
	r.signIn(b, r.tokens["viewer"])
	for i := 0; i < 35; i++ {
		r.clock.Advance(20 * time.Minute)
		if !signedIn() {
			t.Fatalf("signed out after %d minutes of use", (i+1)*20)
		}
	}
	r.clock.Advance(20 * time.Minute)
	if signedIn() {
		t.Error("still signed in 12 hours after sign-in")
	}
}

func TestSignOut(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	ck := r.signIn(b, r.tokens["viewer"])
	_, _, csrf := r.page(b, "/inbox")
	if resp := r.post(b, "/signout", url.Values{"csrf": {csrf}}, ""); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d", resp.StatusCode)
	}
	// The old cookie is worth nothing now, even sent again.
	b2 := r.browser()
	u, _ := url.Parse(r.srv.URL)
	b2.Jar.SetCookies(u, []*http.Cookie{{Name: console.CookieName, Value: ck.Value}})
	if code, _, _ := r.page(b2, "/inbox"); code != http.StatusSeeOther {
		t.Errorf("the inbox with a signed-out session's cookie: %d; want a redirect to sign in", code)
	}
}

// TestSignInTakesTheTokensTenant: an agent's token cannot sign in; a tenant's token shows its
// own tenant, whatever the form names.
func TestSignInTakesTheTokensTenant(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	_, _, csrf := r.page(b, "/signin")
	req, _ := http.NewRequest("POST", r.srv.URL+"/signin", strings.NewReader(url.Values{"csrf": {csrf}, "token": {r.tokens["agent"]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.srv.URL)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(raw), "agent&#39;s token, for /mcp only") {
		t.Fatalf("an agent's token signing in: %d\n%s", resp.StatusCode, raw)
	}
	_, _, csrf = r.page(b, "/signin")
	if resp := r.post(b, "/signin", url.Values{"csrf": {csrf}, "token": {r.tokens["viewer"]}, "tenant": {"beta"}}, r.srv.URL); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	_, body, _ := r.page(b, "/inbox")
	if !strings.Contains(body, "tenant acme") || strings.Contains(body, "tenant beta") {
		t.Errorf("acme's viewer, asking for beta, is shown:\n%s", body)
	}
}

// TestPagesOfferWhatTheRoleMay: a viewer is shown no answers and a read-only editor; an
// approver the answers, and no link to what it may not read.
func TestPagesOfferWhatTheRoleMay(t *testing.T) {
	r := newRig(t)
	viewer := r.browser()
	r.signIn(viewer, r.tokens["viewer"])
	_, inbox, _ := r.page(viewer, "/inbox")
	if strings.Contains(inbox, `value="allow_once"`) || !strings.Contains(inbox, "An approver or an admin answers it") {
		t.Errorf("a viewer's inbox offers answers:\n%s", inbox)
	}
	_, editor, _ := r.page(viewer, "/boundaries?tenant=acme")
	if !strings.Contains(editor, "Read-only: a viewer&#39;s token may read this, not change it") || strings.Contains(editor, ">Save<") {
		t.Errorf("a viewer's hard-block editor is not read-only:\n%s", editor)
	}
	approver := r.browser()
	r.signIn(approver, r.tokens["approver"])
	_, inbox, _ = r.page(approver, "/inbox")
	if !strings.Contains(inbox, `value="allow_once"`) {
		t.Errorf("an approver's inbox offers no answers:\n%s", inbox)
	}
	for _, link := range []string{`href="/audit`, `href="/boundaries`, `href="/try`} {
		if strings.Contains(inbox, link) {
			t.Errorf("an approver is offered %s, which the API refuses it", link)
		}
	}
}

// openStream opens the inbox's event stream in a browser and returns its body, past the
// first line.
func (r *rig) openStream(b *http.Client) io.ReadCloser {
	r.t.Helper()
	resp, err := b.Get(r.srv.URL + console.EventsPath)
	if err != nil {
		r.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("the event stream: %d", resp.StatusCode)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		r.t.Fatal(err)
	}
	return resp.Body
}

// ends reports whether a stream's body ends (not a test of timing: a stream that never ends
// holds the test until its deadline, which fails it).
func ends(body io.ReadCloser) bool {
	defer body.Close()
	_, err := io.Copy(io.Discard, body)
	return err == nil || errors.Is(err, io.ErrUnexpectedEOF)
}

// TestStreamEndsWithItsSession: the inbox's event stream ends when its session does: signed
// out, or idle past the bound.
func TestStreamEndsWithItsSession(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	r.signIn(b, r.tokens["viewer"])
	body := r.openStream(b)
	_, _, csrf := r.page(b, "/inbox")
	if resp := r.post(b, "/signout", url.Values{"csrf": {csrf}}, r.srv.URL); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d", resp.StatusCode)
	}
	if !ends(body) {
		t.Error("the stream did not end with its session's sign-out")
	}

	b = r.browser()
	r.signIn(b, r.tokens["viewer"])
	before := r.clock.Waiters()
	body = r.openStream(b)
	for r.clock.Waiters() <= before { // the stream's watch of its session is waiting
		runtime.Gosched()
	}
	r.clock.Advance(31 * time.Minute)
	if !ends(body) {
		t.Error("the stream did not end when its session idled out")
	}
}
