package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/wardenhq/warden/clock"
)

// CookieName is the cookie of a console session: its random id, nothing else.
const CookieName = "warden_console"

// signinCookie holds the CSRF token of the sign-in form, before there is a session.
const signinCookie = "warden_console_signin"

// session is one person signed in. In memory, the token's secret is kept only here; from a
// store, the session has the token's id and no secret.
type session struct {
	id, secret, csrf string
	// tokenID is the token's id; idHash the id's hash, as a store keeps it.
	tokenID, idHash string
	name, tenant    string
	// role is the token's access (admin, operator, approver, viewer), as the API said at
	// sign-in: what the pages offer. The API decides what is allowed, whatever a page offers.
	role          string
	created, seen time.Time
	// ended is closed when a session in memory ends (signed out, expired, or evicted at the
	// bound), so that what it holds open (the inbox's event stream) ends with it.
	ended chan struct{}
}

// signedIn is who signs in: the token the API accepted, and what the pages show of it.
type signedIn struct {
	secret, tokenID, name, tenant, role string
}

// keeper keeps the console's sessions: memory (one process's) or stored (a store's, which
// every instance on it shares). Safe for concurrent use.
type keeper interface {
	// signIn starts a session, within the bound.
	signIn(ctx context.Context, who signedIn) (*session, error)
	// find returns the live session of a cookie's id and marks it used, or nil.
	find(ctx context.Context, id string) (*session, error)
	// end ends a session, for every instance that serves it.
	end(ctx context.Context, s *session) error
	// hold returns a context that ends with ctx or when the session ends, whichever is first.
	hold(ctx context.Context, s *session) (context.Context, context.CancelFunc)
}

// memory is the keeper of sessions in this process's memory.
type memory struct{ *sessions }

func (m memory) signIn(_ context.Context, who signedIn) (*session, error) {
	ss := m.create(who.secret, who.name, who.tenant, who.role)
	ss.tokenID = who.tokenID
	return ss, nil
}

func (m memory) find(_ context.Context, id string) (*session, error) { return m.get(id), nil }

func (m memory) end(_ context.Context, s *session) error {
	m.sessions.end(s.id)
	return nil
}

// drop removes a session from the map and ends it; s.mu is held.
func (s *sessions) drop(ss *session) {
	if s.byID[ss.id] == ss {
		delete(s.byID, ss.id)
		close(ss.ended)
	}
}

// sessionView is what a page shows of its session.
type sessionView struct {
	Name, Tenant, Role string
}

// mayRoles are the roles the API lets do what each part of the console offers (H1); a page
// offers only what its viewer's role may do.
var mayRoles = map[string][]string{
	"inbox": {"admin", "operator", "approver", "viewer"}, "answer": {"admin", "approver"},
	"surface": {"admin", "operator", "approver", "viewer"}, "audit": {"admin", "operator", "viewer"},
	"try": {"admin", "operator", "viewer"}, "boundaries": {"admin", "operator", "viewer"},
	"edit-boundaries": {"admin"}, "data": {"admin", "operator", "approver", "viewer"},
	"edit-data": {"admin", "operator"},
}

// May reports whether the session's role may do what, as mayRoles says (an unknown what: no).
func (v *sessionView) May(what string) bool {
	return v != nil && slices.Contains(mayRoles[what], v.Role)
}

// sessions are the console's sessions, bounded in number and age. Safe for concurrent use.
type sessions struct {
	clock       clock.Clock
	idle, max   time.Duration
	maxSessions int

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions(c clock.Clock, idle, max time.Duration, n int) *sessions {
	return &sessions{clock: c, idle: idle, max: max, maxSessions: n, byID: map[string]*session{}}
}

// randomToken is 32 random bytes, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session for a token that the API accepted. At the bound, the session
// unused longest ends to make room.
func (s *sessions) create(secret, name, tenant, role string) *session {
	now := s.clock.Now()
	ss := &session{id: randomToken(), secret: secret, csrf: randomToken(), name: name, tenant: tenant, role: role, created: now, seen: now,
		ended: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.byID {
		if s.expired(o, now) {
			s.drop(o)
		}
	}
	for len(s.byID) >= s.maxSessions {
		var oldest *session
		for _, o := range s.byID {
			if oldest == nil || o.seen.Before(oldest.seen) {
				oldest = o
			}
		}
		s.drop(oldest)
	}
	s.byID[ss.id] = ss
	return ss
}

func (s *sessions) expired(ss *session, now time.Time) bool {
	return now.Sub(ss.seen) >= s.idle || now.Sub(ss.created) >= s.max
}

// get returns the live session of an id, and marks it used; an expired one is ended.
func (s *sessions) get(id string) *session {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[id]
	if ss == nil {
		return nil
	}
	if s.expired(ss, now) {
		s.drop(ss)
		return nil
	}
	ss.seen = now
	return ss
}

// end ends a session.
func (s *sessions) end(id string) {
	s.mu.Lock()
	if ss := s.byID[id]; ss != nil {
		s.drop(ss)
	}
	s.mu.Unlock()
}

// hold returns a context that ends with ctx or when the session ends, whichever comes first:
// signed out, evicted, idle past its bound (an open stream is not use: it only watches) or at
// its absolute lifetime. What a session keeps open (the inbox's event stream) is bounded by it.
func (s *sessions) hold(ctx context.Context, ss *session) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		for {
			s.mu.Lock()
			now := s.clock.Now()
			if s.expired(ss, now) {
				s.drop(ss)
			}
			deadline := ss.seen.Add(s.idle)
			if end := ss.created.Add(s.max); end.Before(deadline) {
				deadline = end
			}
			next := deadline.Sub(now)
			s.mu.Unlock()
			timer, stop := s.clock.After(max(next, time.Millisecond))
			select {
			case <-ss.ended:
				stop()
				return
			case <-ctx.Done():
				stop()
				return
			case <-timer:
			}
		}
	}()
	return ctx, cancel
}

// len is how many sessions are held.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// secure reports whether the request came over TLS, directly.
func secure(r *http.Request) bool { return r.TLS != nil }

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, Path=/, Secure over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: secure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: maxAge})
}

// current is the request's session, or nil. When the sessions cannot be read (the store is
// unreachable), it answers 503 itself and ok is false: no page is served without its session.
func (c *Console) current(w http.ResponseWriter, r *http.Request) (s *session, ok bool) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, true
	}
	s, err = c.sessions.find(r.Context(), ck.Value)
	if err != nil {
		c.o.Logger.Error("console: read the session", "err", err)
		http.Error(w, "the console's sessions cannot be read right now; try again", http.StatusServiceUnavailable)
		return nil, false
	}
	return s, true
}

// sameOrigin reports whether the request's Origin, when it has one, is this host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host != r.Host {
		return false
	}
	want := "http"
	if secure(r) {
		want = "https"
	}
	return u.Scheme == want
}

// tokenEqual compares two CSRF tokens in constant time; an empty one never matches.
func tokenEqual(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// checkPost refuses a POST that is not from a page of this console: 403 when the form's CSRF
// token is missing or not the session's, or the Origin is another site's.
func (c *Console) checkPost(w http.ResponseWriter, r *http.Request, want string) bool {
	if !sameOrigin(r) {
		http.Error(w, "forbidden: this form was sent from another site ("+r.Header.Get("Origin")+")", http.StatusForbidden)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if !tokenEqual(r.PostFormValue("csrf"), want) {
		http.Error(w, "forbidden: the form's CSRF token is missing or not this session's; reload the page and send it again", http.StatusForbidden)
		return false
	}
	return true
}
