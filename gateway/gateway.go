// Package gateway is Warden's MCP gateway (M1-M4): agents connect to it over streamable HTTP
// (/mcp on `warden serve`) or stdio (`warden mcp`), with a bearer token that binds their
// tenant, role and profile; each session sees exactly its surface, and every call goes through
// review, the gate, the audit trail and the protection of secrets before the model sees its
// result. Warden serves its own tools (files, shell, subagents) and proxies connectors' MCP
// servers, over stdio or HTTP, with credentials injected by reference.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/verdict"
)

// Version is the implementation version Warden reports to MCP peers.
const Version = "0.5.0"

// Store is what the gateway reads: tokens and the audit trail (cards and the ledger are the
// gate's).
type Store interface {
	auth.Store
	audit.Log
}

// Options configures a Gateway.
type Options struct {
	// Policy is the policy in force and its environment; Reload replaces them.
	Policy *policy.Policy
	Env    *policy.Env
	Store  Store
	// Gate, Reviewer and Broker run every call.
	Gate     *gate.Gate
	Reviewer *review.Reviewer
	Broker   *approval.Broker
	// Workspaces is the directory under which each tenant's workspace is made (<dir>/<tenant>).
	Workspaces string
	// Boundaries returns a tenant's hard-block rules. Nil: the gateway's own, the policy's
	// rules for the tenant (its top-level boundaries, then the tenant's) followed by the
	// document BoundaryStore holds for it. A session reviews each call with what it returns
	// then, so it must return the same *Set until the rules change.
	Boundaries func(tenant string) *boundary.Set
	// BoundaryStore holds each tenant's stored hard-block document (warden boundaries set,
	// PUT /api/v1/tenants/{tenant}/boundaries). Nil: only the policy's rules apply. New
	// reads every document (and fails if it cannot), then follows the store's watch until
	// Close, so a change made on any instance reaches every session's next call.
	BoundaryStore boundary.Store
	// BoundariesRead, if set, is called each time the gateway has read the stored documents
	// again after a change (for tests, which wait for it instead of sleeping).
	BoundariesRead func()
	// Home expands "~/" in hard-block patterns (default: this user's home directory).
	Home string
	// ConnectWait bounds how long a new session's first list waits for its connectors'
	// upstreams to connect (default 5 s); an upstream that connects later is listed then.
	ConnectWait time.Duration
	// Native configures Warden's own tools. The workspace is set per tenant; the sandbox's
	// way out (Native.Sandbox.Proxy) and net_fetch's connections (Native.Fetch's transport)
	// are the session's own egress proxy; other tenants' workspaces are added to
	// Native.Sandbox.Hidden.
	Native native.Options
	// Egress is what each session's egress proxy enforces (SANDBOX_EGRESS and
	// SANDBOX_EGRESS_ALLOWLIST: egress.FromEnv). Nil: the default allowlist, allowlist mode.
	Egress *egress.Checker
	// Approvals is where the hosts a person allowed for a tenant (standing approvals of
	// sandbox_allow_host) are read. Nil: only the answers given through this gateway count.
	Approvals StandingStore
	Logger    *slog.Logger
	// TokenTTL is how long an agent token found good in the store is trusted without asking
	// the store again (0: every request asks). Unknown, revoked and uncheckable tokens are
	// never remembered. A token revoked through RevokeToken, or elsewhere on a store with a
	// feed of revocations (auth.RevocationWatcher), is refused at once and its sessions end;
	// one revoked where no feed tells of it is refused within TokenTTL.
	TokenTTL time.Duration
	// Bounds caps the calls and request bytes in flight, and says how refusals of requests
	// without a valid token are sampled into the audit trail.
	Bounds Bounds
	// RevocationsRead, if set, is called each time the gateway has read the revoked tokens
	// after the store said one may have been revoked (for tests, which wait for it).
	RevocationsRead func()
	// IdleTimeout ends an MCP session over HTTP that sends no request for this long (0: 30
	// minutes; negative: never). A call in progress, waiting for a person included, keeps its
	// session alive; an open event stream alone does not (clients ping to stay).
	IdleTimeout time.Duration
	// MaxSessionsPerToken and MaxSessionsPerTenant cap the live sessions one token, and one
	// tenant, may hold at once (0: 64 and 1,024; negative: no cap). A session past a cap is
	// refused (session_refused) and says which cap.
	MaxSessionsPerToken, MaxSessionsPerTenant int
	// Now is the clock of the roles' session rates (policy.RoleSessions.PerMinute); nil is
	// time.Now. Tests set it so that a minute passes without sleeping.
	Now func() time.Time

	// Sessions, when set, keeps the MCP sessions in the store the instances share, so that
	// any instance serves any session (a request naming a session this instance does not hold
	// builds it again from its record), and a restarted instance serves the sessions it had.
	// Nil: a session lives in this instance's memory and ends with it.
	Sessions instance.Sessions
	// Instance is this process's instance id (package instance), recorded on the sessions it
	// opens.
	Instance string

	// sdkOnly sends every call through the SDK's server and client instead of the lean path
	// and hop (tests compare the two with it).
	sdkOnly bool
}

// Gateway serves MCP sessions. It is safe for concurrent use.
type Gateway struct {
	o        Options
	logger   *slog.Logger
	snapshot atomic.Pointer[snapshot]
	upstream *pool

	mu       sync.Mutex
	sessions map[string]*session // by Warden's session id
	byMCP    map[string]*session // by MCP session id (Mcp-Session-Id), once the client has it
	children map[string]*child   // subagent tokens, by hash: alive while their parent is
	stdio    atomic.Bool
	// sdk is the SDK's streamable HTTP handler, which serves every session's MCP messages.
	sdk http.Handler
	// adopting are the sessions being built again from their records, by MCP session id
	// (shared.go); stopKeep ends their upkeep.
	adopting map[string]*adoption
	stopKeep func()
	// relay carries session messages between instances (Options.Sessions, when its store
	// relays: PostgreSQL).
	relay   instance.Relay
	pins    onceSet    // the pin mismatches recorded, once each
	hints   onceSet    // the understated effects warned of, once each
	tokens  tokenCache // good agent tokens, for Options.TokenTTL
	checker *egress.Checker
	allowed *allowedHosts // the hosts allowed for each tenant
	// egressSeen are the refusals of sandboxed connectors' proxies already recorded.
	egressSeen onceSet
	// enforcedSeen are the system calls of sandboxed connectors' processes that the hard
	// blocks refused, already recorded.
	enforcedSeen onceSet
	secrets      tenantSecrets // each tenant's protected values, shared by its sessions

	// requests are the HTTP requests being served, by the key Handler gave each
	// (requestHeader): a call ends when the request that carries it does (callContext).
	requests   sync.Map
	requestSeq atomic.Uint64
	// draining is set by Shutdown (under mu): calls are refused, and cards cancelled.
	draining bool
	// posts counts the POSTs being served (track); quiet, when set by Shutdown, is closed
	// when none is left.
	posts int
	quiet chan struct{}
	// perToken and perTenant count the live sessions, for the caps (admit).
	perToken, perTenant map[string]int
	// perRole counts the live sessions of each role in each tenant, and opened when each of
	// the last minute's opened, for the roles' caps (policy.RoleSessions).
	perRole map[roleTenant]int
	opened  map[roleTenant][]time.Time

	rules     func(tenant string) *boundary.Set // Options.Boundaries, or bounds.Set
	bounds    *boundary.Tenants                 // the hard blocks, unless Options.Boundaries was given
	stopWatch context.CancelFunc
	watching  sync.WaitGroup

	flight  *inFlight       // calls and request bytes in flight, for Options.Bounds
	sampler *refusalSampler // refusals without a valid token, counted by source
	// stopRevocations ends the watch of the store's token revocations, and waits for it.
	stopRevocations context.CancelFunc

	// reviews are the reviews of ReviewFor in progress (judge.go), whose waits Shutdown
	// cancels.
	reviews map[*heldReview]struct{}

	// leanServed counts the calls the lean path served (lean.go).
	leanServed atomic.Uint64
}

type snapshot struct {
	p   *policy.Policy
	env *policy.Env
	// rules are the hard blocks p writes; rulesErr says why they do not validate.
	rules    *boundary.PolicyRules
	rulesErr error
}

func newSnapshot(p *policy.Policy, env *policy.Env) *snapshot {
	rules, err := boundary.FromPolicy(p)
	return &snapshot{p: p, env: env, rules: rules, rulesErr: err}
}

// New returns a Gateway.
func New(o Options) (*Gateway, error) {
	if o.Policy == nil || o.Env == nil || o.Store == nil || o.Gate == nil || o.Reviewer == nil || o.Broker == nil {
		return nil, errors.New("gateway: a policy, its environment, a store, a gate, a reviewer and a broker are all required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Workspaces == "" {
		o.Workspaces = "workspaces"
	}
	if o.ConnectWait <= 0 {
		o.ConnectWait = 5 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = idleTimeout
	}
	if o.MaxSessionsPerToken == 0 {
		o.MaxSessionsPerToken = maxSessionsPerToken
	}
	if o.MaxSessionsPerTenant == 0 {
		o.MaxSessionsPerTenant = maxSessionsPerTenant
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	abs, err := filepath.Abs(o.Workspaces)
	if err != nil {
		return nil, err
	}
	o.Workspaces = abs
	o.Bounds = o.Bounds.withDefaults()
	g := &Gateway{o: o, logger: o.Logger, sessions: map[string]*session{}, byMCP: map[string]*session{}, children: map[string]*child{},
		tokens: tokenCache{ttl: o.TokenTTL}, perToken: map[string]int{}, perTenant: map[string]int{},
		perRole: map[roleTenant]int{}, opened: map[roleTenant][]time.Time{},
		flight: &inFlight{b: o.Bounds, calls: map[string]int{}}, adopting: map[string]*adoption{}}
	g.sdk = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if s, _ := r.Context().Value(sessionKey).(*session); s != nil {
			return s.server
		}
		return lobby
	}, &mcp.StreamableHTTPOptions{Logger: g.logger, MaxRequestBodyBytes: maxBody})
	snap := newSnapshot(o.Policy, o.Env)
	if snap.rulesErr != nil {
		return nil, fmt.Errorf("gateway: the policy's hard blocks: %w", snap.rulesErr)
	}
	g.snapshot.Store(snap)
	g.rules = o.Boundaries
	if g.rules == nil {
		if g.bounds, err = g.newTenants(); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		g.rules = g.bounds.Set
	}
	if w, ok := o.Store.(auth.RevocationWatcher); ok {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		g.stopRevocations = func() { cancel(); <-done }
		go func() {
			defer close(done)
			g.watchRevocations(ctx, w)
		}()
	}
	g.checker = o.Egress
	if g.checker == nil {
		g.checker = egress.New(egress.Options{})
	}
	g.allowed = &allowedHosts{store: o.Approvals, logger: o.Logger, policy: func() *policy.Policy { return g.snapshot.Load().p }}
	g.upstream = newPool(o.Logger, g.resyncAll, g.resourceUpdated)
	g.upstream.sdkOnly = o.sdkOnly
	g.upstream.sandbox = connectorSandbox{checker: g.checker, native: o.Native.Sandbox, workspaces: o.Workspaces,
		refused: g.connectorEgressRefused, rules: g.rules, enforced: g.connectorEnforced}
	g.sampler = newRefusalSampler(g, o.Bounds)
	if g.shared() {
		every := touchEvery
		if d := g.o.IdleTimeout; d > 0 && d/4 < every {
			every = d / 4
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var relayed <-chan instance.Relayed
		if rl, ok := o.Sessions.(instance.Relay); ok {
			if relayed, err = rl.Relayed(ctx); err != nil {
				cancel()
				return nil, fmt.Errorf("gateway: listen for the messages other instances relay: %w", err)
			}
			g.relay = rl
		}
		g.stopKeep = func() { cancel(); <-done }
		go func() {
			defer close(done)
			var wg sync.WaitGroup
			if relayed != nil {
				wg.Go(func() { g.deliverRelayed(ctx, relayed) })
			}
			g.keepShared(ctx, every)
			wg.Wait()
		}()
	}
	return g, nil
}

// Reload puts a new policy (or environment) in force: every live session's surface is computed
// again, and a session whose tools change is told (notifications/tools/list_changed).
// Reviews made under the old revision are no longer honoured (their tokens name it). A policy
// whose hard blocks do not validate blocks every call (boundary_config_invalid) until a good
// one is loaded: check it with boundary.FromPolicy first.
func (g *Gateway) Reload(p *policy.Policy, env *policy.Env) {
	snap := newSnapshot(p, env)
	if snap.rulesErr != nil {
		g.logger.Error("the reloaded policy's hard blocks do not validate: every call is blocked", "err", snap.rulesErr)
	}
	g.snapshot.Store(snap)
	g.allowed.stale()
	g.resyncAll()
}

// noWait is a context that has ended: a resync lists what its upstreams have now, and waits
// for none that is connecting (its dial's end brings another resync).
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// live is a snapshot of the sessions, to work on without holding g.mu.
func (g *Gateway) live() []*session {
	g.mu.Lock()
	defer g.mu.Unlock()
	list := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		list = append(list, s)
	}
	return list
}

// resyncAll recomputes every session's tools.
func (g *Gateway) resyncAll() {
	for _, s := range g.live() {
		if err := s.resync(noWait); err != nil {
			g.logger.Warn("a session's surface could not be recomputed; it keeps no tools", "session", s.id, "err", err)
		}
	}
}

// resourceUpdated passes an upstream's resource update on to the sessions subscribed to it.
func (g *Gateway) resourceUpdated(p *mcp.ResourceUpdatedNotificationParams) {
	for _, s := range g.live() {
		if s.serves(p.URI) {
			_ = s.server.ResourceUpdated(context.Background(), p)
		}
	}
}

// Close ends every session and upstream.
func (g *Gateway) Close() {
	if g.stopKeep != nil {
		g.stopKeep()
	}
	for _, s := range g.live() {
		s.drop(context.Background(), errShuttingDown)
	}
	g.upstream.closeAll()
	if g.stopRevocations != nil {
		g.stopRevocations()
	}
	if g.stopWatch != nil {
		g.stopWatch()
	}
	g.sampler.close()
	g.watching.Wait()
}

// workspace is a tenant's workspace directory, made if missing.
func (g *Gateway) workspace(tenant string) (string, error) {
	dir := filepath.Join(g.o.Workspaces, tenant)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("make the workspace of %s: %w", tenant, err)
	}
	return filepath.EvalSymlinks(dir)
}

type ctxKey int

const (
	tokenKey ctxKey = iota
	sessionKey
)

// Handler serves MCP over streamable HTTP. Every request must carry a valid bearer token; an
// MCP session is bound to the token that opened it, so another token cannot use it. Every
// request refused before a tool runs (no token, a request too large or malformed, an unknown
// method, another token's session...) is answered with a JSON-RPC error and recorded.
func (g *Gateway) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := g.authenticate(r)
		if err != nil {
			g.unauthenticated(w, r, err)
			return
		}
		if r.ContentLength > maxBody {
			g.refuse(w, r, tok, rejection{status: http.StatusRequestEntityTooLarge, rpc: jsonrpc.CodeInvalidRequest,
				code: "request_too_large", msg: fmt.Sprintf("the request is larger than %d bytes", maxBody)})
			return
		}
		id := r.Header.Get("Mcp-Session-Id")
		ctx := context.WithValue(r.Context(), tokenKey, tok)
		var known bool // id names a session Warden holds
		if id != "" {
			s := g.sessionByMCP(id)
			if known = s != nil; known && s.token.ID != tok.ID {
				// Another token's session: as far as this token can tell, it does not exist.
				g.refuse(w, r, tok, rejection{status: http.StatusNotFound, rpc: codeRefused, code: "unknown_session", msg: "no such session"})
				return
			}
		}
		if id != "" && r.Method == http.MethodDelete {
			// The session ends here, before the SDK closes it: a call of it waiting for a
			// person would otherwise hold the DELETE until the card is answered.
			if s := g.sessionByMCP(id); s != nil && s.token.ID == tok.ID {
				s.end(context.WithoutCancel(r.Context()))
			}
		}
		// A POST is read whole (the SDK would read it whole too): a body without a length
		// that turns out too large, and one that is not JSON-RPC, are refused here, where
		// they can be recorded; the SDK would refuse them in plain text, and record nothing.
		var msgs []*jsonrpc.Request
		var body []byte
		if r.Method == http.MethodPost {
			if r.Body != nil {
				held := &heldBody{ReadCloser: r.Body, f: g.flight, left: r.ContentLength}
				defer held.release()
				r.Body = held
			}
			var x *rejection
			body, x = g.readBody(r)
			if x == nil {
				msgs, x = inspect(body)
			}
			if x != nil {
				g.refuse(w, r, tok, *x)
				return
			}
		}
		if id != "" && known && g.shared() {
			if s := g.sessionByMCP(id); s != nil && s.token.ID == tok.ID && s.endedElsewhere(ctx, id) {
				known = false
			}
		}
		if id != "" && !known && g.shared() {
			// A session this instance does not hold may be one another opened: built again
			// here from its record.
			var refused refusedError
			switch _, err := g.adopt(ctx, id, tok); {
			case err == nil:
				known = true
			case errors.Is(err, errUnknownSession):
			case errors.As(err, &refused):
				g.refuse(w, r, tok, rejection{status: http.StatusForbidden, rpc: codeRefused, code: "session_refused",
					msg: "the session cannot be served here: " + err.Error(), id: onlyID(msgs)})
				return
			default:
				g.logger.Warn("a session could not be resumed", "mcpSession", id, "err", err)
				g.refuse(w, r, tok, rejection{status: http.StatusServiceUnavailable, rpc: codeRefused, code: "session_unavailable",
					msg: err.Error(), id: onlyID(msgs)})
				return
			}
		}
		if id != "" && !known {
			// A session Warden does not hold: it has ended, or never was. Refused here, not
			// left to the SDK, which may still hold an ended session for a moment (its close
			// waits for the session's requests in flight, and some are closed in the
			// background).
			g.refuse(w, r, tok, rejection{status: http.StatusNotFound, rpc: codeRefused, code: "unknown_session",
				msg: "session not found: it has ended, or never existed", id: onlyID(msgs)})
			return
		}
		if id != "" && g.shared() && slices.ContainsFunc(msgs, isInitialized) {
			// Recorded before the SDK hears it, so that an instance building the session again
			// from now on knows the client is initialized.
			if _, err := g.o.Sessions.TouchSession(ctx, id, g.o.Gate.Now(), true); err != nil {
				g.refuse(w, r, tok, rejection{status: http.StatusServiceUnavailable, rpc: codeRefused, code: "session_unavailable",
					msg: "the session's state cannot be recorded: " + err.Error()})
				return
			}
		}
		initialize := slices.ContainsFunc(msgs, func(m *jsonrpc.Request) bool { return m.Method == "initialize" })
		if id == "" && r.Method == http.MethodPost && !initialize &&
			slices.ContainsFunc(msgs, func(m *jsonrpc.Request) bool { return m.Method != "server/discover" && knownMethod(m.Method) }) {
			// A known method outside any session: nothing can serve it. (server/discover is a
			// newer client's probe and is answered; unknown methods get their own error below.)
			g.refuse(w, r, tok, rejection{status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest, code: "session_required",
				msg: "this request names no session (Mcp-Session-Id): a session begins with initialize", id: onlyID(msgs)})
			return
		}
		calls := countCalls(msgs)
		if x := g.flight.acquireCalls(id, tok.ID, calls); x != nil {
			x.id = onlyID(msgs)
			g.refuse(w, r, tok, *x)
			return
		}
		defer g.flight.releaseCalls(id, tok.ID, calls)
		if id == "" && initialize {
			// A new MCP session: open its Warden session (surface, run, workspace) first, on
			// the model and harness its token binds or its initialize states.
			rt, err := routeOf(tok, initMeta(msgs))
			if err == nil {
				var s *session
				if s, err = g.open(ctx, tok, rt); err == nil {
					ctx = context.WithValue(ctx, sessionKey, s)
					w = &sessionRecorder{ResponseWriter: w, g: g, session: s, ctx: ctx, init: initParams(msgs), id: onlyID(msgs)}
				}
			}
			if err != nil {
				g.refuse(w, r, tok, rejection{status: http.StatusForbidden, rpc: codeRefused, code: "session_refused",
					msg: err.Error(), id: onlyID(msgs)})
				return
			}
		}
		// Anything else without a session (a newer client's server/discover probe, a stray
		// call) goes to the lobby, a server that holds no tools: the SDK answers it or
		// rejects it, and no Warden session, run or workspace is spent on it.
		held := &heldRefusal{ResponseWriter: w}
		if r.Method == http.MethodPost {
			defer g.track(r)()
		} else {
			r.Header.Del(requestHeader)
		}
		if s := g.sessionOf(ctx, id, tok); s != nil && r.Method == http.MethodGet {
			s.active.Store(true)
			s.streams.Add(1)
			defer s.streams.Add(-1)
		}
		if s := g.sessionOf(ctx, id, tok); s != nil && r.Method == http.MethodPost {
			s.active.Store(true)
			if !s.ready.Load() && id != "" && g.shared() && !slices.ContainsFunc(msgs, isInitialized) {
				g.catchUp(ctx, s, id)
			}
			s.enter()
			defer s.leave()
			s.cancelLean(msgs)
			if len(msgs) == 1 && !g.o.sdkOnly {
				if p, ok := leanTake(r, s, body, msgs[0]); ok {
					g.leanServed.Add(1)
					s.serveLean(w, r.WithContext(ctx), msgs[0].ID, p)
					return
				}
			}
		}
		g.sdk.ServeHTTP(held, r.WithContext(ctx))
		held.finish(g, r, tok, msgs)
	})
}

// sessionOf is the Warden session a request is for: the one it opens (in ctx), or the one
// its Mcp-Session-Id names, if tok opened it.
func (g *Gateway) sessionOf(ctx context.Context, id string, tok *auth.Token) *session {
	if s, _ := ctx.Value(sessionKey).(*session); s != nil {
		return s
	}
	if id == "" {
		return nil
	}
	if s := g.sessionByMCP(id); s != nil && s.token.ID == tok.ID {
		return s
	}
	return nil
}

// knownMethod reports whether a method is one of MCP's that a session serves.
func knownMethod(m string) bool {
	switch m {
	case "ping", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
		"resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "logging/setLevel",
		"completion/complete", "notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed":
		return true
	}
	return false
}

// maxBody bounds one MCP request (arguments included).
const maxBody = 4 << 20

// codeRefused is the JSON-RPC error code of a request Warden refuses for who sent it (no valid
// token, another token's session, a session its token may not open), rather than for what it
// says: the implementation-defined server error of the JSON-RPC range.
const codeRefused = -32001

// lobby serves requests that arrive without a session and do not open one. It holds nothing.
var lobby = mcp.NewServer(&mcp.Implementation{Name: "warden", Version: Version}, nil)

// A rejection is a request the gateway answers itself with a JSON-RPC error.
type rejection struct {
	status int        // the HTTP status
	rpc    int64      // the JSON-RPC error code
	code   string     // what the audit trail records (and the error's data says)
	msg    string     // what went wrong
	id     jsonrpc.ID // the request's id, when it was one request whose id is known
}

// readBody reads a POST body whole, up to maxBody (a body sent without a length is only
// known to be too large once read), and leaves it to be read again.
func (g *Gateway) readBody(r *http.Request) ([]byte, *rejection) {
	if r.Body == nil {
		return nil, nil
	}
	// A body of known length is read into a buffer of its size: io.ReadAll would double its
	// way there, allocating twice what it keeps.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), maxBody)+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxBody+1))
	body := buf.Bytes()
	r.Body.Close()
	var timeout net.Error
	switch {
	case errors.Is(err, errBusy):
		x := busyBytes(g.o.Bounds.BytesInFlight)
		return nil, &x
	case errors.As(err, &timeout) && timeout.Timeout():
		return nil, &rejection{status: http.StatusRequestTimeout, rpc: jsonrpc.CodeInvalidRequest, code: "request_timeout",
			msg: "the request body did not arrive in time: " + err.Error()}
	case err != nil:
		return nil, &rejection{status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest, code: "invalid_request",
			msg: "the request body could not be read: " + err.Error()}
	}
	if len(body) > maxBody {
		return nil, &rejection{status: http.StatusRequestEntityTooLarge, rpc: jsonrpc.CodeInvalidRequest,
			code: "request_too_large", msg: fmt.Sprintf("the request is larger than %d bytes", maxBody)}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// inspect checks that a POST body is JSON-RPC (one message, or a batch), and returns its
// requests. It refuses what the SDK would refuse in plain text or answer without a trace: a
// body that is not JSON (a parse error), one that is not JSON-RPC (an invalid request), and
// params that are not an object, or a tools/call whose params are not a call (invalid params).
// What the SDK refuses beyond this (an unknown method, a missing id) is caught by heldRefusal.
func inspect(body []byte) ([]*jsonrpc.Request, *rejection) {
	body = bytes.TrimSpace(body)
	var raws []json.RawMessage
	var err error
	if len(body) > 0 && body[0] == '[' {
		err = json.Unmarshal(body, &raws)
	} else if json.Valid(body) {
		raws = []json.RawMessage{body} // one message: no copy of it (body holds no spaces around it)
	} else {
		var one json.RawMessage
		err = json.Unmarshal(body, &one) // for the error that says where it is not JSON
	}
	if err != nil {
		return nil, &rejection{status: http.StatusBadRequest, rpc: jsonrpc.CodeParseError, code: "parse_error",
			msg: "the request is not JSON: " + err.Error()}
	}
	if len(raws) == 0 {
		return nil, &rejection{status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest, code: "invalid_request",
			msg: "the request is an empty batch"}
	}
	var reqs []*jsonrpc.Request
	for _, raw := range raws {
		msg, err := decodeMessage(raw)
		if err != nil {
			return nil, &rejection{status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest, code: "invalid_request",
				msg: "the request is not a JSON-RPC 2.0 message: " + err.Error()}
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			continue // a response to the server's own request (elicitation, sampling)
		}
		reqs = append(reqs, req)
		bad := ""
		if p := bytes.TrimSpace(req.Params); len(p) > 0 && string(p) != "null" {
			var call struct {
				Name string `json:"name"`
			}
			switch {
			case p[0] != '{':
				bad = fmt.Sprintf("the params of %s must be an object", req.Method)
			case req.Method == "tools/call" && json.Unmarshal(p, &call) != nil:
				bad = "the params of tools/call must name the tool (a string)"
			}
		}
		if bad != "" {
			return nil, &rejection{status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidParams, code: "invalid_params",
				msg: bad, id: onlyID(reqs[len(reqs)-1:])}
		}
	}
	return reqs, nil
}

// decodeMessage decodes one JSON-RPC message of a POST body exactly as the SDK does
// (jsonrpc.DecodeMessage), which the SDK will do again when it serves the body. The SDK's
// decoder allocates 32 KB for every value it reads (a request is two), which was most of
// what Warden allocated for a call of its own; so the shape every client sends is decoded
// here (plainRequest), and anything else by the SDK, whose verdict and errors stand.
func decodeMessage(raw []byte) (jsonrpc.Message, error) {
	if req, ok := plainRequest(raw); ok {
		return req, nil
	}
	return jsonrpc.DecodeMessage(raw)
}

// sdkMaxDepth is the deepest nesting of arrays and objects the SDK's decoder accepts.
const sdkMaxDepth = 1000

// plainRequest decodes raw (one valid JSON value) if it is a request in the plain form that
// the SDK decodes to the same request: an object whose only keys, each once and unescaped,
// are jsonrpc (exactly "2.0"), method (a string of printable ASCII without escapes), and
// optionally id (null, such a string, or an integer that a float64 holds exactly) and
// params (any value), nested no deeper than the SDK allows. Otherwise ok is false, and the
// SDK's decoder decides.
func plainRequest(raw []byte) (req *jsonrpc.Request, ok bool) {
	if tooDeep(raw, sdkMaxDepth) {
		return nil, false
	}
	// raw is valid JSON, so it is walked in place: a json.Decoder would buffer the params
	// (megabytes, for a large call) and copy them again.
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, false
	}
	const (
		hasVersion = 1 << iota
		hasMethod
		hasID
		hasParams
	)
	var seen int
	var version, method, id, params json.RawMessage
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != '}'; {
		if raw[i] != '"' {
			return nil, false
		}
		end := stringEnd(raw, i)
		key := raw[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false // an escaped key is left to the SDK
		}
		var bit int
		var dst *json.RawMessage
		switch string(key) {
		case "jsonrpc":
			bit, dst = hasVersion, &version
		case "method":
			bit, dst = hasMethod, &method
		case "id":
			bit, dst = hasID, &id
		case "params":
			bit, dst = hasParams, &params
		default:
			return nil, false // a response, or something the SDK would ignore or refuse
		}
		if seen&bit != 0 {
			return nil, false
		}
		seen |= bit
		if i = skipSpace(raw, end); i == len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		end = valueEnd(raw, i)
		*dst = raw[i:end:end]
		if i = skipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if i == len(raw) || skipSpace(raw, i+1) != len(raw) {
		return nil, false
	}
	if seen&(hasVersion|hasMethod) != hasVersion|hasMethod || string(version) != `"2.0"` || !plainString(method) {
		return nil, false
	}
	req = &jsonrpc.Request{Method: string(method[1 : len(method)-1])}
	if seen&hasParams != 0 {
		req.Params = params
	}
	switch {
	case seen&hasID == 0 || string(id) == "null":
	case plainString(id):
		req.ID, _ = jsonrpc.MakeID(string(id[1 : len(id)-1])) // a string is always an ID
	default:
		// An integer of at most 15 digits: the SDK reads it as a float64 and keeps its
		// int64, which is then the same number.
		digits := strings.TrimPrefix(string(id), "-")
		if len(digits) == 0 || len(digits) > 15 || strings.Trim(digits, "0123456789") != "" {
			return nil, false
		}
		n, err := strconv.ParseInt(string(id), 10, 64)
		if err != nil {
			return nil, false
		}
		req.ID, _ = jsonrpc.MakeID(float64(n)) // a float64 is always an ID
	}
	return req, true
}

// skipSpace is the index of the first byte at or after i that is not JSON white space.
func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string that starts at v[i].
func stringEnd(v []byte, i int) int {
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(v)
}

// valueEnd is the index just past the valid JSON value that starts at v[i].
func valueEnd(v []byte, i int) int {
	if i == len(v) {
		return i
	}
	switch v[i] {
	case '"':
		return stringEnd(v, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(v); j++ {
			switch v[j] {
			case '"':
				j = stringEnd(v, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(v)
	default: // a number, true, false or null
		j := i
		for j < len(v) && !strings.ContainsRune(",}] \t\n\r", rune(v[j])) {
			j++
		}
		return j
	}
}

// plainString reports whether a JSON value is a string of printable ASCII without escapes,
// which every decoder reads the same way.
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// tooDeep reports whether a valid JSON value nests arrays and objects deeper than limit.
func tooDeep(v []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range v {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// onlyID is the id of the request when the body held exactly one.
func onlyID(reqs []*jsonrpc.Request) jsonrpc.ID {
	if len(reqs) == 1 {
		return reqs[0].ID
	}
	return jsonrpc.ID{}
}

// heldRefusal stands between the SDK and the client. The SDK refuses some requests at the
// transport, before any of Warden's code sees them (an unknown method, a missing id, an MCP
// session it does not know, a wrong Accept header), in plain text and without a trace: such
// an answer (any status of 400 and above) is held back, and finish records it and answers with
// a JSON-RPC error instead. Everything else passes through untouched.
type heldRefusal struct {
	http.ResponseWriter
	status int          // the held status, 0 while nothing is held
	passed bool         // a response is under way: nothing is held any more
	body   bytes.Buffer // the held answer (its start)
}

func (h *heldRefusal) WriteHeader(code int) {
	if !h.passed && h.status == 0 && code >= http.StatusBadRequest {
		h.status = code
		return
	}
	if h.status == 0 {
		h.passed = true
		h.ResponseWriter.WriteHeader(code)
	}
}

func (h *heldRefusal) Write(b []byte) (int, error) {
	if h.status != 0 {
		h.body.Write(b[:min(len(b), max(0, heldMax-h.body.Len()))])
		return len(b), nil
	}
	h.passed = true
	return h.ResponseWriter.Write(b)
}

func (h *heldRefusal) Flush() {
	if h.status != 0 {
		return
	}
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// heldMax bounds what is kept of a held answer.
const heldMax = 4096

// finish answers and records a refusal the SDK made, if it made one.
func (h *heldRefusal) finish(g *Gateway, r *http.Request, tok *auth.Token, msgs []*jsonrpc.Request) {
	if h.status == 0 {
		return
	}
	msg := strings.TrimSpace(h.body.String())
	x := rejection{status: h.status, rpc: jsonrpc.CodeInvalidRequest, code: "invalid_request", msg: msg, id: onlyID(msgs)}
	var resp struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	sdkRPC := strings.HasPrefix(h.Header().Get("Content-Type"), "application/json") &&
		json.Unmarshal(h.body.Bytes(), &resp) == nil && resp.Error != nil
	switch {
	case sdkRPC:
		x.rpc, x.msg = resp.Error.Code, resp.Error.Message
		if x.rpc == jsonrpc.CodeMethodNotFound {
			x.code = "unknown_method"
		}
	case strings.HasPrefix(msg, "JSON RPC not handled"):
		// The SDK's words for a method it does not have (jsonrpc2.ErrNotHandled).
		x.rpc, x.code = jsonrpc.CodeMethodNotFound, "unknown_method"
		if len(msgs) == 1 {
			x.msg = fmt.Sprintf("method not found: this server has no method %q", msgs[0].Method)
		}
	case h.status == http.StatusNotFound:
		x.rpc, x.code = codeRefused, "unknown_session"
	case h.status == http.StatusRequestEntityTooLarge:
		x.code = "request_too_large"
	}
	if !sdkRPC {
		g.refuse(h.ResponseWriter, r, tok, x)
		return
	}
	// The SDK answered in JSON-RPC already: its answer goes out as it is, and is recorded.
	g.record(r, tok, x)
	h.ResponseWriter.WriteHeader(h.status)
	_, _ = h.ResponseWriter.Write(h.body.Bytes())
}

// sessionRecorder learns the MCP session id the SDK gives a new session from the response
// header, and binds it to the token that opened it.
type sessionRecorder struct {
	http.ResponseWriter
	g       *Gateway
	session *session
	done    bool
	// ctx and init are the request's, for the session's record in the store (shared.go);
	// failed: it could not be written, and the client is told so instead of the SDK's answer.
	ctx    context.Context
	init   json.RawMessage
	id     jsonrpc.ID
	failed bool
}

func (r *sessionRecorder) WriteHeader(code int) {
	if r.record(); r.failed {
		return
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *sessionRecorder) Write(b []byte) (int, error) {
	if r.record(); r.failed {
		return len(b), nil
	}
	return r.ResponseWriter.Write(b)
}

func (r *sessionRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *sessionRecorder) record() {
	if r.done {
		return
	}
	r.done = true
	if id := r.Header().Get("Mcp-Session-Id"); id != "" {
		if r.g.shared() {
			// Recorded before the client learns the id, so that its next request, wherever
			// it lands, finds the session.
			if err := r.g.recordOpened(r.ctx, r.session, id, r.init); err != nil {
				r.failed = true
				r.Header().Del("Mcp-Session-Id")
				answer(r.ResponseWriter, rejection{status: http.StatusServiceUnavailable, rpc: codeRefused, code: "session_unavailable",
					msg: "the session cannot be recorded in the store: " + err.Error(), id: r.id})
				go r.session.end(context.Background())
				return
			}
		}
		if gs := r.session.gs.Load(); gs != nil && gs.Run != nil {
			r.Header().Set(RunHeader, gs.Run.ID)
		}
		r.session.mcpID.Store(&id)
		r.g.mu.Lock()
		r.g.byMCP[id] = r.session
		r.g.mu.Unlock()
	} else {
		// The SDK did not make a session (a bad request): nothing will use this one.
		go r.session.end(context.Background())
	}
}

// authenticate finds the agent token of a request.
func (g *Gateway) authenticate(r *http.Request) (*auth.Token, error) {
	secret, ok := auth.Bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, errors.New("a bearer token is required (warden token create)")
	}
	return g.tokenFor(r.Context(), secret)
}

// errTokenInvalid is a token secret no good token has (it never existed, or was revoked), as
// opposed to one that cannot be checked right now.
var errTokenInvalid = errors.New("the token is not valid (unknown or revoked)")

// tokenFor resolves a token secret: a stored agent token, or a live subagent's token.
func (g *Gateway) tokenFor(ctx context.Context, secret string) (*auth.Token, error) {
	hash := auth.Hash(secret)
	g.mu.Lock()
	c, isChild := g.children[hash]
	g.mu.Unlock()
	if isChild {
		return c.token, nil
	}
	tok, err := g.tokens.lookup(ctx, g.o.Store, hash)
	if errors.Is(err, auth.ErrNotFound) && g.shared() {
		// A subagent's token its parent session made on another instance.
		return g.storedChild(ctx, hash)
	}
	if errors.Is(err, auth.ErrNotFound) {
		return nil, errTokenInvalid
	}
	if err != nil {
		return nil, fmt.Errorf("the token cannot be checked: %w", err)
	}
	if tok.Role != auth.RoleAgent {
		return nil, fmt.Errorf("%s token cannot open an MCP session; create one with warden token create", auth.A(tok.Role))
	}
	return tok, nil
}

// unauthenticated refuses a request without a valid token. When the token is one that opened
// the MCP session the request names, it has been revoked since (a session is only opened with
// a good token): the session ends with it (its run, its children, its stream of
// notifications, which would otherwise go on), and the refusal is recorded as its tenant's.
// Only the token's own secret can end a session so; a token that cannot be checked right now
// (the store failing) ends nothing.
func (g *Gateway) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	x := rejection{status: http.StatusUnauthorized, rpc: codeRefused, code: "unauthenticated", msg: err.Error()}
	secret, ok := auth.Bearer(r.Header.Get("Authorization"))
	s := g.sessionByMCP(r.Header.Get("Mcp-Session-Id"))
	if !ok || s == nil || !errors.Is(err, errTokenInvalid) || s.token.Hash == "" || s.token.Hash != auth.Hash(secret) {
		// Nobody known sent it: counted by source, and recorded once a window with the
		// count, so that a flood of them cannot fill the audit trail.
		g.sampler.note(r, x.msg)
		answer(w, x)
		return
	}
	g.record(r, s.token, x) // while the session is there to be named
	g.logger.Info("a session's token is no longer valid; the session ends", "session", s.id)
	if ss := s.ss.Load(); ss != nil {
		_ = ss.Close() // the SDK forgets the MCP session, and its stream ends
	}
	s.end(context.WithoutCancel(r.Context()))
	answer(w, x)
}

// sessionByMCP is the live session an MCP session id names, or nil.
func (g *Gateway) sessionByMCP(id string) *session {
	if id == "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byMCP[id]
}

// refuse answers a request the gateway will not pass on with a JSON-RPC error, and records it.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, tok *auth.Token, x rejection) {
	g.record(r, tok, x)
	answer(w, x)
}

// answer writes a rejection's JSON-RPC error.
func answer(w http.ResponseWriter, x rejection) {
	x.msg = clip(x.msg)
	switch x.status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", retryAfter)
	case http.StatusRequestTimeout:
		w.Header().Set("Connection", "close") // the rest of the body may still come: nothing more is read
	}
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(x.status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": x.id.Raw(),
		"error": map[string]any{"code": x.rpc, "message": x.msg, "data": map[string]any{"code": x.code}}})
}

// record appends a refused request to the audit trail: as its token's, and its session's when
// it names one of that token's sessions.
func (g *Gateway) record(r *http.Request, tok *auth.Token, x rejection) {
	e := &audit.Event{Time: time.Now(), Kind: audit.KindDecision, Tool: "mcp:" + r.Method, Decision: verdict.Deny.String(),
		Blockers: []audit.Blocker{{Code: x.code, Detail: clip(x.msg)}}}
	if tok != nil {
		e.Tenant, e.Role, e.Profile, e.Principal = tok.Tenant, tok.SessionRole, tok.Profile, tok.Name
		if s := g.sessionByMCP(r.Header.Get("Mcp-Session-Id")); s != nil && s.token.ID == tok.ID {
			e.Session = s.id
		}
	}
	if err := g.o.Store.Append(context.WithoutCancel(r.Context()), e); err != nil {
		g.logger.Error("a refused request could not be recorded", "err", err)
	}
}

// clip bounds a message that may quote the request (a method name can be megabytes long).
func clip(s string) string {
	const n = 512
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// ServeStdio serves one MCP session over in and out, for the token (warden mcp).
func (g *Gateway) ServeStdio(ctx context.Context, secret string, in io.ReadCloser, out io.WriteCloser) error {
	tok, err := g.tokenFor(ctx, secret)
	if err != nil {
		return err
	}
	// Over stdio the session opens before its initialize is read: the token binds its model and
	// harness, and an initialize that states others is refused (session.checkStated).
	rt, err := routeOf(tok, nil)
	if err != nil {
		return err
	}
	s, err := g.open(ctx, tok, rt)
	if err != nil {
		return err
	}
	defer s.end(context.WithoutCancel(ctx))
	g.stdio.Store(true)
	// The pipe holds the end of the input until every request read is answered; it stops
	// holding when the session ends (a revoked token) or ctx does.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.life, cancel)()
	pipe := newStdioPipe(wctx, in, out)
	return s.server.Run(ctx, &mcp.IOTransport{Reader: stdioReader{pipe, in}, Writer: stdioWriter{pipe, out}})
}

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// principal names who a token acts for.
func principal(t *auth.Token) string {
	if t.Name != "" {
		return t.Name
	}
	return "token:" + t.ID
}

// describe renders a denial for the model: the decision and every reason.
func describe(blockers []review.Blocker) string {
	var b strings.Builder
	for _, x := range blockers {
		fmt.Fprintf(&b, "- %s", x.Code)
		if x.Rule != "" {
			fmt.Fprintf(&b, " (rule %s)", x.Rule)
		}
		if x.Detail != "" {
			fmt.Fprintf(&b, ": %s", x.Detail)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Workspaces is the directory under which each tenant's workspace is made.
func (g *Gateway) Workspaces() string { return g.o.Workspaces }
