package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
)

// A call lives only as long as somebody waits for its answer. Its context ends when the first
// of these ends: the SDK's own (the client sent notifications/cancelled), the HTTP request
// that carries it (the client timed out or went away: with no event store, nothing could
// deliver the answer later), and its session (DELETE, idle timeout, a revoked token, the
// server shutting down). A call waiting for a person then cancels its card (the broker
// expires it with channel canceled, recorded), and a call running is stopped: nothing runs
// for nobody, and nothing waits on a card nobody will see answered.

// Why a call's context ended, as its cause.
var (
	errClientGone    = errors.New("the client is no longer waiting for the call's answer")
	errShuttingDown  = errors.New("the server is shutting down")
	errDrainedAnswer = errors.New("the server is shutting down: calls waiting for a person are cancelled")
)

// requestHeader carries, from Handler to the call's handler, the key of the HTTP request a
// message came in (Gateway.requests); the SDK passes a request's header on with each message
// (mcp.RequestExtra). A client's own value is always replaced.
const requestHeader = "Warden-Request"

// track registers the HTTP request r while it is served, so that the calls it carries end
// when it does; the function returned forgets it.
func (g *Gateway) track(r *http.Request) func() {
	key := strconv.FormatUint(g.requestSeq.Add(1), 36)
	r.Header.Set(requestHeader, key)
	g.requests.Store(key, r.Context())
	g.mu.Lock()
	g.posts++
	g.mu.Unlock()
	return func() {
		g.requests.Delete(key)
		g.mu.Lock()
		if g.posts--; g.posts == 0 && g.quiet != nil {
			close(g.quiet)
			g.quiet = nil
		}
		g.mu.Unlock()
	}
}

// callContext returns the context a call runs under (see above), the function that ends it
// with a cause, and the function that releases it once the call is done.
func (s *session) callContext(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelCauseFunc, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stops := []func() bool{context.AfterFunc(s.life, func() { cancel(context.Cause(s.life)) })}
	if req.Extra != nil && req.Extra.Header != nil {
		if v, ok := s.g.requests.Load(req.Extra.Header.Get(requestHeader)); ok {
			stops = append(stops, context.AfterFunc(v.(context.Context), func() { cancel(errClientGone) }))
		}
	}
	return ctx, cancel, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// admitCall reports whether a call may start: not once the gateway is shutting down.
func (g *Gateway) admitCall() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.draining
}

// Shutdown ends the gateway's service for a graceful stop: new calls and sessions are
// refused, calls waiting for a person are cancelled at once (their cards expire, recorded, so
// none is left pending for an answer that could run nothing), the requests in flight (calls
// running, and the answers of those cancelled) are given until ctx ends to finish, and then
// every session ends (its run, its stream). Close still follows, for the upstreams.
func (g *Gateway) Shutdown(ctx context.Context) {
	g.mu.Lock()
	g.draining = true
	var quiet chan struct{}
	if g.posts > 0 {
		g.quiet = make(chan struct{})
		quiet = g.quiet
	}
	g.mu.Unlock()
	for _, s := range g.live() {
		s.cancelWaiting(errDrainedAnswer)
	}
	g.cancelReviews(errDrainedAnswer)
	if quiet != nil {
		select {
		case <-quiet:
		case <-ctx.Done():
		}
	}
	for _, s := range g.live() {
		s.endAndClose(context.WithoutCancel(ctx), errShuttingDown)
	}
}

// cancelWaiting cancels the session's calls that wait for a person.
func (s *session) cancelWaiting(why error) {
	s.mu.Lock()
	var ws []*waiter
	for _, w := range s.waiting {
		if c := w.card.Load(); c != nil && c.State == approval.Pending {
			ws = append(ws, w)
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.cancel(why)
	}
}

// endAndClose ends the session here and closes its MCP session, which ends its stream. A
// session kept in the store lives on (drop): another instance, or this one started again,
// serves its next request.
func (s *session) endAndClose(ctx context.Context, why error) {
	s.drop(ctx, why)
	if ss := s.ss.Load(); ss != nil {
		_ = ss.Close()
	}
}

// The defaults of Options.IdleTimeout, MaxSessionsPerToken and MaxSessionsPerTenant.
const (
	idleTimeout          = 30 * time.Minute
	maxSessionsPerToken  = 64
	maxSessionsPerTenant = 1024
)

// admit counts a new session against its token's and tenant's caps, or says which cap it
// would pass. g.mu is held; release undoes it.
func (g *Gateway) admit(s *session) error {
	if g.draining {
		return errShuttingDown
	}
	tok := s.token
	if n, limit := g.perToken[tok.ID], g.o.MaxSessionsPerToken; limit > 0 && n >= limit {
		return fmt.Errorf("this token already holds %d live sessions, its cap (end one with DELETE, or let it idle out)", n)
	}
	if n, limit := g.perTenant[tok.Tenant], g.o.MaxSessionsPerTenant; limit > 0 && n >= limit {
		return fmt.Errorf("tenant %s already holds %d live sessions, its cap", tok.Tenant, n)
	}
	if err := g.admitRole(s); err != nil {
		return err
	}
	g.perToken[tok.ID]++
	g.perTenant[tok.Tenant]++
	s.counted = true
	return nil
}

// roleTenant keys the counts of a role's sessions in a tenant.
type roleTenant struct{ role, tenant string }

// admitRole counts a new session against its role's caps in its tenant (policy.RoleSessions):
// its live sessions, and those opened in the last minute. g.mu is held.
func (g *Gateway) admitRole(s *session) error {
	tok := s.token
	role, ok := g.snapshot.Load().p.Role(tok.SessionRole)
	if !ok || (role.Sessions.MaxLive == 0 && role.Sessions.PerMinute == 0) {
		return nil // an unknown role is refused when the surface opens
	}
	k := roleTenant{role.ID, tok.Tenant}
	if n, limit := g.perRole[k], role.Sessions.MaxLive; limit > 0 && n >= limit {
		return fmt.Errorf("tenant %s already holds %d live sessions of role %s, the role's cap (sessions.maxLive)", tok.Tenant, n, role.ID)
	}
	now := g.o.Now()
	recent := g.opened[k]
	for len(recent) > 0 && !recent[0].After(now.Add(-time.Minute)) {
		recent = recent[1:]
	}
	if limit := role.Sessions.PerMinute; limit > 0 && len(recent) >= limit {
		g.opened[k] = recent
		return fmt.Errorf("tenant %s opened %d sessions of role %s in the last minute, the role's rate (sessions.perMinute); the next may open in %s",
			tok.Tenant, len(recent), role.ID, recent[0].Add(time.Minute).Sub(now).Round(time.Second))
	}
	if role.Sessions.PerMinute > 0 {
		g.opened[k] = append(recent, now)
	}
	g.perRole[k]++
	s.role = k
	return nil
}

// release gives back what admit counted, once. g.mu is held.
func (g *Gateway) release(s *session) {
	if !s.counted {
		return
	}
	s.counted = false
	tok := s.token
	if g.perToken[tok.ID]--; g.perToken[tok.ID] <= 0 {
		delete(g.perToken, tok.ID)
	}
	if g.perTenant[tok.Tenant]--; g.perTenant[tok.Tenant] <= 0 {
		delete(g.perTenant, tok.Tenant)
	}
	if s.role != (roleTenant{}) {
		if g.perRole[s.role]--; g.perRole[s.role] <= 0 {
			delete(g.perRole, s.role)
		}
		s.role = roleTenant{}
	}
}
