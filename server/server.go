// Package server is Warden's HTTP face under `warden serve`: health and readiness, and the
// REST API (H2) for approvals (the inbox of cards, answers, standing approvals), the audit
// trail, the management plane (tenants, connections, profiles, grants, allowances and egress
// allowlists, through manage.Service), each tenant's stored hard blocks (ETag and If-Match on
// every write) and the usage of runs
// (turns and model dollars a harness reports, held to the run's limits), the explorer (a
// session's surface, a call reviewed without running), the review of calls an agent's own
// runtime runs (recorded, with a card to wait for when one asks) and a live stream of
// approval cards.
// Every other path goes to the web console, when there is one. Every /api request
// needs a bearer token (H1): stored as a hash, carrying a role and, except for admins, a
// tenant; another tenant's object is 404, so nothing leaks that it exists. The API describes
// itself in OpenAPI 3.1 at /api/v1/openapi.json, and every error it answers is JSON.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/clock"
)

// Store is what the server reads and writes.
type Store interface {
	approval.Store
	audit.Log
	auth.Store
	Ping(ctx context.Context) error
}

// Options configures a Server.
type Options struct {
	Store  Store
	Broker *approval.Broker
	Logger *slog.Logger
	// Ready, if set, adds its own checks to /readyz (the policy loaded, the sandbox usable).
	Ready func(ctx context.Context) error
	// Info is shown by /readyz (the policy revision, what is switched off).
	Info map[string]any
	// Boundaries serves GET and PUT /api/v1/tenants/{tenant}/boundaries (nil: 404).
	Boundaries Boundaries
	// Metrics serves GET /metrics to admin tokens (nil: 404). The metrics span every tenant,
	// so no tenant's token may read them.
	Metrics http.Handler
	// ValidateToken checks a token created through POST /api/v1/tokens against the policy in
	// force (nil: agent tokens cannot be created there).
	ValidateToken auth.Validator
	// Runs serves POST /api/v1/runs/{id}/usage (nil: 404).
	Runs Runs
	// Data serves the management plane's routes: tenants, connections, profiles, grants,
	// allowances and egress allowlists (nil: 404).
	Data Data
	// Clock tells the day whose spending the allowances show (nil: the real clock).
	Clock clock.Clock
	// Explorer serves GET /api/v1/surface and POST /api/v1/review for people's tokens (nil:
	// 404).
	Explorer Explorer
	// Agents serves POST /api/v1/review for agent tokens: a call their own runtime runs,
	// judged and recorded (nil: 404).
	Agents AgentReviewer
	// Cards feeds GET /api/v1/approvals/events (nil: 404).
	Cards *CardFeed
	// Console serves every path outside the API, health, readiness and metrics (nil: those
	// are JSON 404s like the API's).
	Console http.Handler
}

// Server serves the HTTP API. It is safe for concurrent use.
type Server struct {
	o   Options
	mux *http.ServeMux
	// ping is how often event streams ping and read the store (eventPing when made).
	ping time.Duration
}

// New returns a Server.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{o: o, mux: http.NewServeMux(), ping: eventPing}
	for _, rt := range routes {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })
		if rt.roles == nil {
			s.mux.Handle(rt.method+" "+rt.path, h)
			continue
		}
		s.mux.Handle(rt.method+" "+rt.path, s.authed(h, rt.roles...))
	}
	return s
}

// route is one route of the server: New registers exactly these, and the test of the OpenAPI
// document reads the same table, so that no route can be served without being described.
type route struct {
	method, path string
	// roles may use the route; nil: it needs no token.
	roles  []string
	handle func(*Server, http.ResponseWriter, *http.Request)
}

// routes are every route the server serves.
var routes = []route{
	{"GET", "/healthz", nil, (*Server).healthz},
	{"GET", "/readyz", nil, (*Server).readyz},
	{"GET", "/metrics", []string{auth.RoleAdmin}, (*Server).metrics},
	{"GET", "/api/v1/openapi.json", nil, (*Server).openapi},
	{"GET", "/api/v1/approvals", []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer}, (*Server).listCards},
	{"GET", "/api/v1/approvals/standing", []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer}, (*Server).listStanding},
	{"DELETE", "/api/v1/approvals/standing/{id}", []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover}, (*Server).revokeStanding},
	{"GET", "/api/v1/approvals/{id}", []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer}, (*Server).getCard},
	{"POST", "/api/v1/approvals/{id}", []string{auth.RoleAdmin, auth.RoleApprover}, (*Server).answer},
	{"GET", "/api/v1/audit", []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleViewer}, (*Server).queryAudit},
	{"GET", "/api/v1/audit/keys", []string{auth.RoleAdmin, auth.RoleViewer}, (*Server).auditKeys},
	{"GET", "/api/v1/tenants/{tenant}/boundaries", boundaryReaders, (*Server).getBoundaries},
	{"PUT", "/api/v1/tenants/{tenant}/boundaries", boundaryWriters, (*Server).putBoundaries},
	{"GET", "/api/v1/whoami", []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer, auth.RoleAgent}, (*Server).whoami},
	{"GET", "/api/v1/tokens", tokenRoutes, (*Server).listTokens},
	{"POST", "/api/v1/tokens", tokenRoutes, (*Server).createToken},
	{"DELETE", "/api/v1/tokens/{id}", tokenRoutes, (*Server).revokeToken},
	{"POST", "/api/v1/runs/{id}/usage", runUsers, (*Server).runUsage},

	// The management plane (data.go, connections.go, grants.go, allowances.go): every tenant's
	// data but its hard blocks.
	{"GET", "/api/v1/tenants", dataReaders, (*Server).listTenants},
	{"POST", "/api/v1/tenants", tenantWriters, (*Server).createTenant},
	{"GET", "/api/v1/tenants/{tenant}", dataReaders, (*Server).getTenant},
	{"PUT", "/api/v1/tenants/{tenant}", tenantWriters, (*Server).putTenant},
	{"DELETE", "/api/v1/tenants/{tenant}", tenantWriters, (*Server).deleteTenant},
	{"GET", "/api/v1/tenants/{tenant}/connections", dataReaders, (*Server).listConnections},
	{"POST", "/api/v1/tenants/{tenant}/connections", dataWriters, (*Server).createConnection},
	{"GET", "/api/v1/tenants/{tenant}/connections/{id}", dataReaders, (*Server).getConnection},
	{"PUT", "/api/v1/tenants/{tenant}/connections/{id}", dataWriters, (*Server).putConnection},
	{"DELETE", "/api/v1/tenants/{tenant}/connections/{id}", dataWriters, (*Server).deleteConnection},
	{"GET", "/api/v1/tenants/{tenant}/connections/{id}/tools", dataReaders, (*Server).connectionTools},
	{"GET", "/api/v1/tenants/{tenant}/profiles", dataReaders, (*Server).listProfiles},
	{"POST", "/api/v1/tenants/{tenant}/profiles", dataWriters, (*Server).createProfile},
	{"GET", "/api/v1/tenants/{tenant}/profiles/{id}", dataReaders, (*Server).getProfile},
	{"PUT", "/api/v1/tenants/{tenant}/profiles/{id}", dataWriters, (*Server).putProfile},
	{"DELETE", "/api/v1/tenants/{tenant}/profiles/{id}", dataWriters, (*Server).deleteProfile},
	{"GET", "/api/v1/tenants/{tenant}/profiles/{id}/grant", dataReaders, (*Server).getGrant},
	{"PUT", "/api/v1/tenants/{tenant}/profiles/{id}/grant", dataWriters, (*Server).putGrant},
	{"GET", "/api/v1/tenants/{tenant}/allowances", dataReaders, (*Server).listAllowances},
	{"GET", "/api/v1/tenants/{tenant}/egress", dataReaders, (*Server).getEgress},
	{"PUT", "/api/v1/tenants/{tenant}/egress", dataWriters, (*Server).putEgress},

	// The console's needs (explore.go, events.go), for any client too.
	{"GET", "/api/v1/surface", surfaceReaders, (*Server).getSurface},
	{"POST", "/api/v1/review", reviewers, (*Server).reviewCall},
	{"POST", "/api/v1/review/outcome", []string{auth.RoleAgent}, (*Server).reportOutcome},
	{"GET", "/api/v1/approvals/events", []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer}, (*Server).approvalEvents},
}

// Route is one route of the API as the server serves it.
type Route struct {
	Method, Path string
	// Roles are the token roles that may use it; empty: no token is needed.
	Roles []string
}

// Routes returns every route a Server serves, in the order New registers them.
func Routes() []Route {
	out := make([]Route, len(routes))
	for i, rt := range routes {
		out[i] = Route{Method: rt.method, Path: rt.path, Roles: slices.Clone(rt.roles)}
	}
	return out
}

// ServeHTTP serves a request. A path outside the API, health, readiness and metrics goes to
// the console when there is one. A path the server does not serve is a JSON 404, and a method
// a path does not take a JSON 405 with an Allow header, like every other error of the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.o.Console != nil && !apiPath(r.URL.Path) {
		s.o.Console.ServeHTTP(w, r)
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	// The mux found no route: its answer says which of 404 and 405 (and what is allowed), in
	// plain text that the API's clients cannot read as an error of theirs.
	probe := &statusProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		s.fail(w, r, apiError{http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("%s does not take %s; it takes %s", r.URL.Path, r.Method, allow)}, nil)
		return
	}
	s.fail(w, r, apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no such path: %s", r.URL.Path)}, nil)
}

// apiPath reports whether a path is the API's, health's, readiness's or the metrics', never the
// console's.
func apiPath(p string) bool {
	switch p {
	case "/api", "/healthz", "/readyz", "/metrics":
		return true
	}
	return strings.HasPrefix(p, "/api/")
}

// statusProbe records what the mux's own 404 and 405 handlers answer, and drops their text.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }

func (p *statusProbe) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}

func (p *statusProbe) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

// metrics serves the metrics, when the server has them.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.Metrics == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server keeps no metrics"}, nil)
		return
	}
	s.o.Metrics.ServeHTTP(w, r)
}

// apiError is the body of every error response: a stable code and a message for people, apart
// from any internal cause (which goes to the log).
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, e apiError, cause error) {
	if cause != nil {
		s.o.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "err", cause)
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	body := map[string]any{"ready": true}
	for k, v := range s.o.Info {
		body[k] = v
	}
	var problems []string
	if err := s.o.Store.Ping(ctx); err != nil {
		problems = append(problems, "store: "+err.Error())
	}
	if s.o.Ready != nil {
		if err := s.o.Ready(ctx); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		body["ready"] = false
		body["problems"] = problems
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

type ctxKey struct{}

// caller is the token a request came with.
func caller(r *http.Request) *auth.Token { return r.Context().Value(ctxKey{}).(*auth.Token) }

// tenantOf is the tenant a caller may see: "" (every tenant) for an admin.
func tenantOf(t *auth.Token) string {
	if t.Role == auth.RoleAdmin {
		return ""
	}
	return t.Tenant
}

// TokenFinder is a Store that finds a good token by its id (neither revoked nor expired), or
// says auth.ErrNotFound: what a request made with ActAs needs. Both of Warden's stores are.
type TokenFinder interface {
	TokenByID(ctx context.Context, id string) (*auth.Token, error)
}

type actAsKey struct{}

// ActAs returns a context whose requests, served in process by a Server, act as the stored
// token with the id: the server reads the token by its id (through Store, which must be a
// TokenFinder) on every request, and refuses a token revoked or expired as it refuses its
// secret. The web console calls the API this way, by the id of the token its person signed in
// with, on any instance, without holding the token's secret.
//
// Only code in this process can make such a request: a context is no part of what a client
// sends, and a request with one is judged by the token alone, whatever its Authorization
// header says.
func ActAs(ctx context.Context, tokenID string) context.Context {
	return context.WithValue(ctx, actAsKey{}, tokenID)
}

// token is the good token a request comes with: ActAs's, else its bearer secret's. Its error
// is auth.ErrNotFound when there is none.
func (s *Server) token(r *http.Request) (*auth.Token, error) {
	if id, ok := r.Context().Value(actAsKey{}).(string); ok {
		f, ok := s.o.Store.(TokenFinder)
		if !ok {
			return nil, errors.New("the store cannot find a token by its id (server.TokenFinder)")
		}
		if id == "" {
			return nil, auth.ErrNotFound
		}
		return f.TokenByID(r.Context(), id)
	}
	secret, ok := auth.Bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, errNoBearer
	}
	return s.o.Store.TokenByHash(r.Context(), auth.Hash(secret))
}

// errNoBearer is a request without a bearer token.
var errNoBearer = errors.New("no bearer token")

// authed requires a good token with one of the roles: a bearer secret, or ActAs's in process.
func (s *Server) authed(h http.HandlerFunc, roles ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := s.token(r)
		switch {
		case errors.Is(err, errNoBearer):
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
			s.fail(w, r, apiError{http.StatusUnauthorized, "unauthenticated", "a bearer token is required"}, nil)
			return
		case errors.Is(err, auth.ErrNotFound):
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden", error="invalid_token"`)
			s.fail(w, r, apiError{http.StatusUnauthorized, "unauthenticated", "the token is not valid"}, nil)
			return
		case err != nil:
			s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "tokens cannot be checked right now"}, err)
			return
		}
		allowed := false
		for _, role := range roles {
			allowed = allowed || tok.Role == role
		}
		if !allowed {
			s.fail(w, r, apiError{http.StatusForbidden, "forbidden", fmt.Sprintf("%s token may not do this", auth.A(tok.Role))}, nil)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, tok)))
	})
}

// cardJSON is a card as the API shows it.
type cardJSON struct {
	ID             string          `json:"id"`
	Tenant         string          `json:"tenant"`
	Session        string          `json:"session"`
	Principal      string          `json:"principal,omitempty"`
	Tool           string          `json:"tool"`
	Digest         string          `json:"digest"`
	PolicyRevision string          `json:"policy"`
	Args           json.RawMessage `json:"args,omitempty"`
	Reason         string          `json:"reason"`
	State          approval.State  `json:"state"`
	Answer         approval.Answer `json:"answer,omitempty"`
	Approver       string          `json:"approver,omitempty"`
	Created        time.Time       `json:"created"`
	Deadline       time.Time       `json:"deadline"`
	Answered       *time.Time      `json:"answered,omitempty"`
	Offers         []string        `json:"offers,omitempty"`

	// Channel is how the card left pending: api, elicitation, cli, deadline or canceled.
	Channel approval.Channel `json:"channel,omitempty"`
}

func toCardJSON(c *approval.Card) cardJSON {
	j := cardJSON{ID: c.ID, Tenant: c.Tenant, Session: c.Session, Principal: c.Principal, Tool: c.Tool,
		Digest: c.Digest, PolicyRevision: c.PolicyRevision, Args: c.Args, Reason: c.Reason, State: c.State,
		Answer: c.Answer, Approver: c.Approver, Channel: c.Channel, Created: c.Created, Deadline: c.Deadline}
	if !c.Answered.IsZero() {
		a := c.Answered
		j.Answered = &a
	}
	if c.State == approval.Pending {
		j.Offers = []string{string(approval.AllowOnce), string(approval.AllowTenant), string(approval.Deny)}
	}
	if len(j.Args) > 0 && !json.Valid(j.Args) {
		j.Args = nil
	}
	return j
}

func (s *Server) listCards(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := approval.CardFilter{Tenant: tenantOf(caller(r)), State: approval.State(q.Get("state"))}
	switch f.State {
	case "", approval.Pending, approval.Allowed, approval.Denied, approval.Expired:
	default:
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", "state must be pending, allowed, denied or expired"}, nil)
		return
	}
	if t := q.Get("tenant"); t != "" {
		if f.Tenant != "" && t != f.Tenant {
			writeJSON(w, http.StatusOK, map[string]any{"approvals": []cardJSON{}})
			return
		}
		f.Tenant = t
	}
	limit, ok := s.limit(w, r)
	if !ok {
		return
	}
	f.Limit = limit
	cards, err := s.o.Store.Cards(r.Context(), f)
	if err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the approvals cannot be read right now"}, err)
		return
	}
	out := make([]cardJSON, len(cards))
	for i, c := range cards {
		out[i] = toCardJSON(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

func (s *Server) getCard(w http.ResponseWriter, r *http.Request) {
	c, err := s.o.Store.Card(r.Context(), tenantOf(caller(r)), r.PathValue("id"))
	switch {
	case errors.Is(err, approval.ErrNotFound):
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such approval"}, nil)
	case err != nil:
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the approval cannot be read right now"}, err)
	default:
		writeJSON(w, http.StatusOK, toCardJSON(c))
	}
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Answer string `json:"answer"`
		Digest string `json:"digest"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", "the body must be {\"answer\": \"allow_once\" | \"allow_tenant\" | \"deny\"}: " + err.Error()}, nil)
		return
	}
	a := approval.Answer(body.Answer)
	if !a.Valid() {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("answer %q: want allow_once, allow_tenant or deny", body.Answer)}, nil)
		return
	}
	tok := caller(r)
	approver := tok.Name
	if approver == "" {
		approver = "token:" + tok.ID
	}
	c, err := s.o.Broker.Answer(r.Context(), tenantOf(tok), r.PathValue("id"), a, approver, approval.ChannelAPI, body.Digest)
	switch {
	case errors.Is(err, approval.ErrNotFound):
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such approval"}, nil)
	case errors.Is(err, approval.ErrNotPending):
		s.fail(w, r, s.notPending(r.Context(), tenantOf(tok), r.PathValue("id")), nil)
	case errors.Is(err, approval.ErrDigestMismatch):
		s.fail(w, r, apiError{http.StatusConflict, "digest_mismatch", "the answer names another call than this approval's"}, nil)
	case err != nil && c != nil:
		// The answer stands; saving the standing approval failed.
		s.fail(w, r, apiError{http.StatusInternalServerError, "partial", "the call was allowed once, but the standing approval could not be saved"}, err)
	case err != nil:
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the answer could not be recorded"}, err)
	default:
		writeJSON(w, http.StatusOK, toCardJSON(c))
	}
}

// notPending says why a card can no longer be answered: answered already, expired at its
// deadline, or ended with its call (which can no longer run, whatever the answer).
func (s *Server) notPending(ctx context.Context, tenant, id string) apiError {
	c, err := s.o.Store.Card(ctx, tenant, id)
	switch {
	case err != nil:
		return apiError{http.StatusConflict, "already_answered", "the approval was already answered or has expired"}
	case c.Channel == approval.ChannelCanceled:
		return apiError{http.StatusConflict, "approval_canceled", fmt.Sprintf(
			"the call this approval was for ended at %s (its client went away, its session ended, or the server restarted): it can no longer run, whatever the answer",
			c.Answered.UTC().Format(time.RFC3339))}
	case c.State == approval.Expired:
		return apiError{http.StatusConflict, "approval_expired", fmt.Sprintf(
			"the approval expired unanswered at %s and the call was denied: it can no longer run", c.Answered.UTC().Format(time.RFC3339))}
	default:
		return apiError{http.StatusConflict, "already_answered", fmt.Sprintf("the approval was already answered (%s by %s)", c.Answer, c.Approver)}
	}
}

type standingJSON struct {
	ID       string     `json:"id"`
	Tenant   string     `json:"tenant"`
	Tool     string     `json:"tool"`
	Digest   string     `json:"digest"`
	Card     string     `json:"card,omitempty"`
	Approver string     `json:"approver,omitempty"`
	Created  time.Time  `json:"created"`
	Revoked  *time.Time `json:"revoked,omitempty"`
}

func (s *Server) listStanding(w http.ResponseWriter, r *http.Request) {
	list, err := s.o.Store.Standings(r.Context(), tenantOf(caller(r)))
	if err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "standing approvals cannot be read right now"}, err)
		return
	}
	out := make([]standingJSON, len(list))
	for i, st := range list {
		out[i] = standingJSON{ID: st.ID, Tenant: st.Tenant, Tool: st.Tool, Digest: st.Digest, Card: st.CardID,
			Approver: st.Approver, Created: st.Created}
		if !st.Revoked.IsZero() {
			rv := st.Revoked
			out[i].Revoked = &rv
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"standing": out})
}

func (s *Server) revokeStanding(w http.ResponseWriter, r *http.Request) {
	err := s.o.Store.RevokeStanding(r.Context(), tenantOf(caller(r)), r.PathValue("id"), time.Now())
	switch {
	case errors.Is(err, approval.ErrNotFound):
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such standing approval"}, nil)
	case err != nil:
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the standing approval could not be revoked"}, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) limit(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 100, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", "limit must be a whole number from 1 to 10000"}, nil)
		return 0, false
	}
	return n, true
}

// auditKeys lists the public keys the instances sign audit checkpoints with.
func (s *Server) auditKeys(w http.ResponseWriter, r *http.Request) {
	cp, ok := s.o.Store.(audit.Checkpointer)
	if !ok {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "this store keeps no audit signing keys"}, nil)
		return
	}
	keys, err := cp.Keys(r.Context())
	if err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the audit signing keys cannot be read right now"}, err)
		return
	}
	if keys == nil {
		keys = []audit.Key{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

func (s *Server) queryAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := audit.Filter{Tenant: tenantOf(caller(r)), Session: q.Get("session"), Tool: q.Get("tool"),
		Decision: q.Get("decision"), Kind: q.Get("kind"), CallID: q.Get("call"), Harness: q.Get("harness")}
	// An unknown kind or decision would match nothing and read as "no such events".
	if err := f.Check(); err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", err.Error()}, nil)
		return
	}
	if t := q.Get("tenant"); t != "" {
		if f.Tenant != "" && t != f.Tenant {
			writeJSON(w, http.StatusOK, map[string]any{"events": []*audit.Event{}})
			return
		}
		f.Tenant = t
	}
	for key, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(key); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("%s %q: want an RFC 3339 time, such as 2026-11-30T12:00:00Z", key, v)}, nil)
				return
			}
			*dst = t
		}
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("after %q: want an event id (a whole number from 0)", v)}, nil)
			return
		}
		f.AfterID = n
	}
	limit, ok := s.limit(w, r)
	if !ok {
		return
	}
	f.Limit = limit
	events, err := s.o.Store.Query(r.Context(), f)
	if err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the audit trail cannot be read right now"}, err)
		return
	}
	if q.Get("format") == "jsonl" || strings.Contains(r.Header.Get("Accept"), "application/x-ndjson") {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_ = audit.WriteJSONL(w, events)
		return
	}
	if events == nil {
		events = []*audit.Event{}
	}
	body := map[string]any{"events": events}
	if len(events) == limit {
		body["next"] = events[len(events)-1].ID
	}
	writeJSON(w, http.StatusOK, body)
}
