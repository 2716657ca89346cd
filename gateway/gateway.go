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
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/gate"
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
	// Boundaries returns a tenant's hard-block rules (nil: none).
	Boundaries func(tenant string) *boundary.Set
	// Native configures Warden's own tools (the workspace is set per tenant).
	Native native.Options
	Logger *slog.Logger
}

// Gateway serves MCP sessions. It is safe for concurrent use.
type Gateway struct {
	o        Options
	logger   *slog.Logger
	snapshot atomic.Pointer[snapshot]
	upstream *pool

	mu       sync.Mutex
	sessions map[string]*session // by Warden's session id
	byMCP    map[string]string   // MCP session id → the token id that opened it
	children map[string]*child   // subagent tokens, by hash: alive while their parent is
	stdio    atomic.Bool
}

type snapshot struct {
	p   *policy.Policy
	env *policy.Env
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
	abs, err := filepath.Abs(o.Workspaces)
	if err != nil {
		return nil, err
	}
	o.Workspaces = abs
	g := &Gateway{o: o, logger: o.Logger, sessions: map[string]*session{}, byMCP: map[string]string{}, children: map[string]*child{}}
	g.snapshot.Store(&snapshot{p: o.Policy, env: o.Env})
	g.upstream = newPool(o.Logger, g.resyncAll, g.resourceUpdated)
	return g, nil
}

// Reload puts a new policy (or environment) in force: every live session's surface is computed
// again, and a session whose tools change is told (notifications/tools/list_changed).
// Reviews made under the old revision are no longer honoured (their tokens name it).
func (g *Gateway) Reload(p *policy.Policy, env *policy.Env) {
	g.snapshot.Store(&snapshot{p: p, env: env})
	g.resyncAll()
}

// resyncAll recomputes every session's tools.
func (g *Gateway) resyncAll() {
	g.mu.Lock()
	list := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		list = append(list, s)
	}
	g.mu.Unlock()
	for _, s := range list {
		if err := s.resync(context.Background()); err != nil {
			g.logger.Warn("a session's surface could not be recomputed; it keeps no tools", "session", s.id, "err", err)
		}
	}
}

// resourceUpdated passes an upstream's resource update on to the sessions subscribed to it.
func (g *Gateway) resourceUpdated(p *mcp.ResourceUpdatedNotificationParams) {
	g.mu.Lock()
	list := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		list = append(list, s)
	}
	g.mu.Unlock()
	for _, s := range list {
		if s.serves(p.URI) {
			_ = s.server.ResourceUpdated(context.Background(), p)
		}
	}
}

// Close ends every session and upstream.
func (g *Gateway) Close() {
	g.mu.Lock()
	list := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		list = append(list, s)
	}
	g.mu.Unlock()
	for _, s := range list {
		s.end(context.Background())
	}
	g.upstream.closeAll()
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
// MCP session is bound to the token that opened it, so another token cannot use it.
func (g *Gateway) Handler() http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if s, _ := r.Context().Value(sessionKey).(*session); s != nil {
			return s.server
		}
		return lobby
	}, &mcp.StreamableHTTPOptions{Logger: g.logger, MaxRequestBodyBytes: maxBody})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := g.authenticate(r)
		if err != nil {
			g.refuse(w, r, http.StatusUnauthorized, "unauthenticated", err.Error(), nil)
			return
		}
		if r.ContentLength > maxBody {
			g.refuse(w, r, http.StatusRequestEntityTooLarge, "request_too_large",
				fmt.Sprintf("the request is larger than %d bytes", maxBody), tok)
			return
		}
		id := r.Header.Get("Mcp-Session-Id")
		ctx := context.WithValue(r.Context(), tokenKey, tok)
		if id != "" {
			g.mu.Lock()
			owner, known := g.byMCP[id]
			g.mu.Unlock()
			if known && owner != tok.ID {
				// Another token's session: as far as this token can tell, it does not exist.
				g.refuse(w, r, http.StatusNotFound, "unknown_session", "no such session", tok)
				return
			}
		} else if r.Method == http.MethodPost {
			initialize, err := peekInitialize(r)
			if err != nil {
				g.refuse(w, r, http.StatusRequestEntityTooLarge, "request_too_large", err.Error(), tok)
				return
			}
			if initialize {
				// A new MCP session: open its Warden session (surface, run, workspace) first.
				s, err := g.open(ctx, tok)
				if err != nil {
					g.refuse(w, r, http.StatusForbidden, "session_refused", err.Error(), tok)
					return
				}
				ctx = context.WithValue(ctx, sessionKey, s)
				w = &sessionRecorder{ResponseWriter: w, g: g, token: tok.ID, session: s}
			}
			// Anything else without a session (a newer client's server/discover probe, a
			// stray call) goes to the lobby, a server that holds no tools: the SDK answers
			// it or rejects it, and no Warden session, run or workspace is spent on it.
		}
		mcpHandler.ServeHTTP(w, r.WithContext(ctx))
	})
}

// maxBody bounds one MCP request (arguments included).
const maxBody = 4 << 20

// lobby serves requests that arrive without a session and do not open one. It holds nothing.
var lobby = mcp.NewServer(&mcp.Implementation{Name: "warden", Version: Version}, nil)

// peekInitialize reports whether a POST body is an initialize request (alone or in a batch),
// leaving the body to be read again.
func peekInitialize(r *http.Request) (bool, error) {
	if r.Body == nil {
		return false, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body.Close()
	if err != nil {
		return false, fmt.Errorf("the request body could not be read: %w", err)
	}
	if len(body) > maxBody {
		return false, fmt.Errorf("the request is larger than %d bytes", maxBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var one struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &one) == nil {
		return one.Method == "initialize", nil
	}
	var batch []struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &batch) == nil {
		for _, m := range batch {
			if m.Method == "initialize" {
				return true, nil
			}
		}
	}
	return false, nil
}

// sessionRecorder learns the MCP session id the SDK gives a new session from the response
// header, and binds it to the token that opened it.
type sessionRecorder struct {
	http.ResponseWriter
	g       *Gateway
	token   string
	session *session
	done    bool
}

func (r *sessionRecorder) WriteHeader(code int) {
	r.record()
	r.ResponseWriter.WriteHeader(code)
}

func (r *sessionRecorder) Write(b []byte) (int, error) {
	r.record()
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
		r.g.mu.Lock()
		r.g.byMCP[id] = r.token
		r.g.mu.Unlock()
		r.session.mcpID.Store(&id)
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

// tokenFor resolves a token secret: a stored agent token, or a live subagent's token.
func (g *Gateway) tokenFor(ctx context.Context, secret string) (*auth.Token, error) {
	hash := auth.Hash(secret)
	g.mu.Lock()
	c, isChild := g.children[hash]
	g.mu.Unlock()
	if isChild {
		return c.token, nil
	}
	tok, err := g.o.Store.TokenByHash(ctx, hash)
	if errors.Is(err, auth.ErrNotFound) {
		return nil, errors.New("the token is not valid (unknown or revoked)")
	}
	if err != nil {
		return nil, fmt.Errorf("the token cannot be checked: %w", err)
	}
	if tok.Role != auth.RoleAgent {
		return nil, fmt.Errorf("a %s token cannot open an MCP session; create one with warden token create", tok.Role)
	}
	return tok, nil
}

// refuse answers a request the gateway will not pass on, and records it.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string, tok *auth.Token) {
	e := &audit.Event{Time: time.Now(), Kind: audit.KindDecision, Tool: "mcp:" + r.Method, Decision: verdict.Deny.String(),
		Blockers: []audit.Blocker{{Code: code, Detail: msg}}}
	if tok != nil {
		e.Tenant, e.Role, e.Profile, e.Principal = tok.Tenant, tok.SessionRole, tok.Profile, tok.Name
	}
	if err := g.o.Store.Append(context.WithoutCancel(r.Context()), e); err != nil {
		g.logger.Error("a refused request could not be recorded", "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32001, "message": msg, "data": map[string]any{"code": code}}})
}

// ServeStdio serves one MCP session over in and out, for the token (warden mcp).
func (g *Gateway) ServeStdio(ctx context.Context, secret string, in io.ReadCloser, out io.WriteCloser) error {
	tok, err := g.tokenFor(ctx, secret)
	if err != nil {
		return err
	}
	s, err := g.open(ctx, tok)
	if err != nil {
		return err
	}
	defer s.end(context.WithoutCancel(ctx))
	g.stdio.Store(true)
	return s.server.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
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
