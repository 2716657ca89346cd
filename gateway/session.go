package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/secret"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// A session is one MCP session: its surface, its review and gate sessions, its workspace, its
// registry of protected values, and the MCP server that lists exactly its tools.
type session struct {
	g     *Gateway
	id    string
	token *auth.Token
	child *child // set for a subagent's session
	// route is the model and the harness the session runs on: bound in its token, or stated
	// at initialize (see routeOf).
	route     route
	workspace string
	server    *mcp.Server
	exec      *native.Executor
	egress    sessionNet // the session's egress proxy, started at its first use
	// egressSeen are the refusals of the session's proxy already recorded.
	egressSeen onceSet
	secrets    *secret.Registry
	mcpID      atomic.Pointer[string]
	ss         atomic.Pointer[mcp.ServerSession]
	// ready: the client said it is initialized (notifications/initialized), so the SDK would
	// serve its calls; the lean path serves none before.
	ready atomic.Bool
	// leanCalls end the calls the lean path serves, by JSON-RPC id, when the client cancels one.
	leanCalls map[string]context.CancelCauseFunc

	// The idle timer (see enter): POSTs in progress, and the timer that closes the session.
	idleMu    sync.Mutex
	idleRefs  int
	idleTimer *time.Timer

	gs atomic.Pointer[gate.Session] // replaced when the surface is computed again

	// syncing runs one sync at a time, so a catalog read before an upstream changed is never
	// applied after one read since (it would list again a tool just withheld).
	syncing sync.Mutex
	mu      sync.Mutex
	tools   map[string]*entry    // what is listed, by name
	extras  map[string]*extra    // resources, templates and prompts passed through, by kind and key
	reached []*upstream          // the upstreams the session holds tools of
	subs    map[string]*upstream // the session's resource subscriptions, by URI
	waiting map[string]*waiter
	kids    []*child
	ended   bool
	// life ends when the session does (endFor), with why as its cause: every call of the
	// session ends with it (callContext).
	life context.Context
	stop context.CancelCauseFunc
	// counted: the session counts toward its token's and tenant's caps (under g.mu).
	counted bool
	// role is the role and tenant admitRole counted the session under (zero: none).
	role roleTenant

	// Shared sessions (shared.go). presetMCP is the MCP session id of a session built again
	// here from its record (the SDK's session gets it: GetSessionID); active is set by every
	// request and cleared when the sweep marks the session used in the store.
	presetMCP string
	active    atomic.Bool
	// liveAt is when the store last said the session lives (endedElsewhere), in Unix ns.
	liveAt atomic.Int64
	// streams counts the client's event streams (GET) open on this instance: messages
	// relayed by the others are delivered here only while one is.
	streams atomic.Int32
}

// An entry is one tool a session lists: Warden's own, or an upstream's.
type entry struct {
	tool   *policy.Tool
	def    *mcp.Tool
	up     *upstream            // nil for Warden's own tools
	remote string               // the upstream's name for it
	schema *jsonschema.Resolved // nil: left to the upstream to enforce
	digest string               // of the definition, to notice a change
	// binds: an upstream tool whose input schema declares protectedBindings; Warden resolves
	// the handles in that argument to their values for this call only.
	binds bool
}

// An extra is a resource, resource template or prompt of an upstream that a session passes
// through.
type extra struct {
	kind   string // "resource", "template" or "prompt"
	key    string // the URI, URI template, or namespaced prompt name
	remote string // the upstream's prompt name
	up     *upstream
}

// A waiter is a call waiting for a person's answer, for progress notifications.
type waiter struct {
	digest string
	token  any
	ss     *mcp.ServerSession
	card   atomic.Pointer[approval.Card]
	cancel context.CancelCauseFunc // ends the call (Shutdown cancels calls waiting for a person)
}

// open starts a session for a token: its surface (refused if the role's invariants would be
// broken), its run (refused at the run limits), its workspace and its tools.
func (g *Gateway) open(ctx context.Context, tok *auth.Token, rt route) (_ *session, err error) {
	return g.openAs(ctx, tok, rt, nil)
}

// openAs opens a session, or, given its record (rec), builds again here a session kept in the
// store: same Warden id, same run (not started again), its MCP id preset for the SDK.
func (g *Gateway) openAs(ctx context.Context, tok *auth.Token, rt route, rec *instance.Session) (_ *session, err error) {
	s := &session{g: g, id: newID(), token: tok, route: rt, tools: map[string]*entry{}, extras: map[string]*extra{}, waiting: map[string]*waiter{}}
	if rec != nil {
		s.id, s.presetMCP = rec.Warden, rec.ID
	}
	s.liveAt.Store(time.Now().UnixNano())
	s.life, s.stop = context.WithCancelCause(context.Background())
	g.mu.Lock()
	for _, c := range g.children {
		if c.token == tok {
			s.child = c
		}
	}
	err = g.admit(s)
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			g.mu.Lock()
			g.release(s)
			g.mu.Unlock()
		}
	}()

	sf, err := s.surface()
	if err != nil {
		return nil, err
	}
	if err := s.route.agrees(sf); err != nil {
		return nil, err
	}
	if s.child != nil {
		s.workspace = s.child.root
	} else if s.workspace, err = g.workspace(sf.Tenant().ID); err != nil {
		return nil, err
	}
	rs, err := s.reviewSession(sf)
	if err != nil {
		return nil, err
	}
	started := g.o.Gate.Now()
	if rec != nil {
		started = rec.Opened
	}
	gs := &gate.Session{Review: rs, Principal: principal(tok), Run: gate.RunFor(sf, "run-"+s.id, s.id, started)}
	if g.shared() {
		gs.OnStop = s.stopped
	}
	switch {
	case gs.Run == nil:
	case rec != nil && rec.Run == "":
		gs.Run = nil // the session ran no profile when it was opened
	case rec != nil:
		gs.Run.ID, gs.Run.Shared = rec.Run, true // started when the session was opened
	default:
		gs.Run.Shared = g.shared()
		if err := g.o.Gate.StartRun(ctx, gs); err != nil {
			return nil, err
		}
	}
	s.gs.Store(gs)
	if s.exec, err = native.New(s.nativeOptions()); err != nil {
		s.endRun(ctx)
		return nil, err
	}
	s.secrets = secret.NewRegistryWith(s.scope(), secret.Options{Issuers: issuers(sf.Policy()), Shared: g.sharedSecrets(sf.Tenant().ID)})

	s.server = mcp.NewServer(&mcp.Implementation{Name: "warden", Title: "Warden", Version: Version}, &mcp.ServerOptions{
		Instructions: "Tools are served through Warden: every call is reviewed against what it would touch, " +
			"may wait for a person's approval, and is recorded. A denied call says why.",
		Logger: g.logger,
		Capabilities: &mcp.ServerCapabilities{
			//lint:ignore SA1019 clients of the 2025 protocol versions still set a log level (logging/setLevel)
			Logging:   &mcp.LoggingCapabilities{},
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		},
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { s.ready.Store(true) },
		GetSessionID: func() string {
			if s.presetMCP != "" {
				return s.presetMCP
			}
			return rand.Text()
		},
		SubscribeHandler: func(ctx context.Context, r *mcp.SubscribeRequest) error { return s.subscribe(ctx, r.Params.URI, true) },
		UnsubscribeHandler: func(ctx context.Context, r *mcp.UnsubscribeRequest) error {
			return s.subscribe(ctx, r.Params.URI, false)
		},
	})
	s.server.AddReceivingMiddleware(s.middleware, s.redactLists)

	s.syncing.Lock()
	g.mu.Lock()
	g.sessions[s.id] = s
	g.mu.Unlock()
	// The first list waits a little for the session's upstreams to connect (most do in well
	// under a second), but never for a hanging one: after ConnectWait the session lists what
	// is there, and the rest follows with notifications/tools/list_changed.
	wctx, cancel := context.WithTimeout(ctx, g.o.ConnectWait)
	err = s.sync(wctx, sf)
	cancel()
	s.syncing.Unlock()
	if err != nil {
		s.end(ctx)
		return nil, err
	}
	ro, why := sf.ReadOnly()
	if rec != nil {
		return s, nil
	}
	g.logger.Info("session opened", "session", s.id, "tenant", sf.Tenant().ID, "role", sf.Role().ID,
		"principal", gs.Principal, "tools", len(s.tools), "harness", sf.Harness().ID, "model", sf.Model(), "readOnly", ro, "why", why)
	return s, nil
}

// surface computes the session's surface under the policy in force.
func (s *session) surface() (*surface.Surface, error) {
	if c := s.child; c != nil {
		parent := c.parent.gs.Load()
		if parent == nil {
			return nil, errors.New("the subagent's parent session has ended")
		}
		return parent.Review.Surface.Child(c.role, c.profile)
	}
	snap := s.g.snapshot.Load()
	return surface.Open(snap.env, surface.Spec{Role: s.token.SessionRole, Tenant: s.token.Tenant, Profile: s.token.Profile,
		Harness: s.route.harness, Model: s.route.model})
}

func (s *session) reviewSession(sf *surface.Surface) (*review.Session, error) {
	paths, err := action.NewResolver(s.workspace, s.workspace)
	if err != nil {
		return nil, fmt.Errorf("the workspace %s: %w", s.workspace, err)
	}
	rs := &review.Session{ID: s.id, Surface: sf, Paths: paths}
	if s.g.rules != nil {
		rs.Boundaries = s.g.rules(sf.Tenant().ID)
		// The session's commands run in the sandbox with these rules enforced at every
		// system call (nativeOptions), or do not run.
		rs.Enforced = !s.g.o.Native.Sandbox.Off
	}
	return rs, nil
}

// resync computes the session's surface again (a policy reload, a catalog that changed) and
// tells the client if its tools changed.
func (s *session) resync(ctx context.Context) error {
	s.syncing.Lock()
	defer s.syncing.Unlock()
	sf, err := s.surface()
	if err != nil {
		// The session may no longer be opened at all: it keeps no tools.
		s.mu.Lock()
		names := slices.Collect(maps.Keys(s.tools))
		clear(s.tools)
		s.mu.Unlock()
		s.server.RemoveTools(names...)
		return err
	}
	if old := s.gs.Load(); old != nil && old.Review.Surface.Policy() != sf.Policy() {
		rs, err := s.reviewSession(sf)
		if err != nil {
			return err
		}
		s.gs.Store(old.Rebind(rs))
	}
	return s.sync(ctx, sf)
}

// sync lists exactly the tools of the surface that Warden can serve: its own, and those of
// upstreams that are connected. The SDK tells the client when the list changes. s.syncing is
// held, from before the surface was computed.
func (s *session) sync(ctx context.Context, sf *surface.Surface) error {
	want, ups := s.catalog(ctx, sf)
	s.syncExtras(ups)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil
	}
	var gone []string
	for name, e := range s.tools {
		if w, ok := want[name]; !ok || w.digest != e.digest {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	var added []*entry
	for name, e := range want {
		if _, ok := s.tools[name]; !ok {
			s.tools[name] = e
			added = append(added, e)
		}
	}
	s.mu.Unlock()
	if len(gone) > 0 {
		s.server.RemoveTools(gone...)
	}
	for _, e := range added {
		s.server.AddTool(e.def, s.handle)
	}
	return nil
}

// catalog is what the session should list under a surface, and the upstreams it reaches. A
// pinned tool whose upstream definition no longer matches its pin is not listed (S11).
func (s *session) catalog(ctx context.Context, sf *surface.Surface) (map[string]*entry, []*upstream) {
	out := map[string]*entry{}
	ups := map[*policy.Server]*upstream{}
	for _, name := range sf.Tools() {
		t, _ := sf.Policy().Tool(name)
		switch {
		case t.Kind == "net_search":
			// Only a harness that searches itself holds one (search.provider: harness): Warden
			// has no search to serve.
		case t.Kind != "":
			def := &mcp.Tool{Name: t.Name, Description: nativeDescription(t), InputSchema: nativeSchema(t),
				Annotations: nativeAnnotations(t)}
			out[name] = newEntry(t, def, nil, "")
		case t.Server.Upstream != nil:
			u, ok := ups[t.Server]
			if !ok {
				u = s.upstream(ctx, sf, t.Server)
				ups[t.Server] = u
			}
			if u == nil {
				continue
			}
			prefix := "mcp__" + t.Server.ID + "__"
			cat := u.catalog()
			if !t.Pattern {
				if m := t.Server.Managed; m != nil && strings.TrimPrefix(name, prefix) == m.Resolve {
					continue // Warden's channel for managed references, not the model's
				}
				if def, ok := cat[strings.TrimPrefix(name, prefix)]; ok {
					if !s.pinHeld(ctx, t.Server, name, def) {
						out[name] = newEntry(t, renamed(def, name, t), u, def.Name)
						s.g.warnUnderstated(name, t, def.Annotations)
					}
				} else {
					s.g.logger.Warn("a tool of the policy is not in its upstream's catalog", "tool", name)
				}
				continue
			}
			for remote, def := range cat {
				full := prefix + remote
				if m := t.Server.Managed; m != nil && remote == m.Resolve {
					continue // Warden's channel for managed references, not the model's
				}
				if pt, ok := sf.Policy().Tool(full); ok && pt == t && sf.Has(full) && !s.pinHeld(ctx, t.Server, full, def) {
					out[full] = newEntry(t, renamed(def, full, t), u, remote)
					s.g.warnUnderstated(full, t, def.Annotations)
				}
			}
		}
		// Other tools of the surface (a harness's own, a platform server without an upstream)
		// are not Warden's to serve.
	}
	var reached []*upstream
	for _, u := range ups {
		if u != nil {
			reached = append(reached, u)
		}
	}
	return out, reached
}

// syncExtras passes through the resources, templates and prompts of the upstreams the session
// reaches (it holds at least one of their tools), and nothing of the others.
func (s *session) syncExtras(ups []*upstream) {
	s.mu.Lock()
	s.reached = ups
	s.mu.Unlock()
	want := map[string]*extra{}
	for _, u := range ups {
		resources, templates, prompts := u.extras()
		for _, r := range resources {
			want["resource\x00"+r.URI] = &extra{kind: "resource", key: r.URI, up: u}
		}
		for _, t := range templates {
			want["template\x00"+t.URITemplate] = &extra{kind: "template", key: t.URITemplate, up: u}
		}
		for _, p := range prompts {
			name := "mcp__" + u.server.ID + "__" + p.Name
			want["prompt\x00"+name] = &extra{kind: "prompt", key: name, remote: p.Name, up: u}
		}
	}
	s.mu.Lock()
	var goneR, goneT, goneP []string
	for k, x := range s.extras {
		if w, ok := want[k]; ok && w.up == x.up {
			delete(want, k)
			continue
		}
		delete(s.extras, k)
		switch x.kind {
		case "resource":
			goneR = append(goneR, x.key)
		case "template":
			goneT = append(goneT, x.key)
		default:
			goneP = append(goneP, x.key)
		}
	}
	maps.Copy(s.extras, want)
	s.mu.Unlock()
	s.server.RemoveResources(goneR...)
	s.server.RemoveResourceTemplates(goneT...)
	s.server.RemovePrompts(goneP...)
	for _, u := range ups {
		resources, templates, prompts := u.extras()
		for _, r := range resources {
			if x := want["resource\x00"+r.URI]; x != nil {
				s.server.AddResource(r, s.readResource(x))
			}
		}
		for _, t := range templates {
			if x := want["template\x00"+t.URITemplate]; x != nil {
				s.server.AddResourceTemplate(t, s.readResource(x))
			}
		}
		for _, p := range prompts {
			if x := want["prompt\x00mcp__"+u.server.ID+"__"+p.Name]; x != nil {
				c := *p
				c.Name = x.key
				s.server.AddPrompt(&c, s.getPrompt(x))
			}
		}
	}
}

// readResource reads a resource through its upstream, recorded, with protected values
// redacted from its text.
func (s *session) readResource(x *extra) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		up, err := s.upstreamNow(ctx, x.up)
		var res *mcp.ReadResourceResult
		if err == nil {
			res, err = up.readResource(ctx, uri)
		}
		s.note(ctx, "resources/read", map[string]any{"uri": uri, "connector": x.up.server.ID}, err)
		if err != nil {
			return nil, errors.New(s.secrets.Redact(err.Error()))
		}
		s.redactContents(res.Contents)
		return res, nil
	}
}

// getPrompt gets a prompt through its upstream, recorded, with protected values redacted.
func (s *session) getPrompt(x *extra) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := map[string]any{"prompt": x.remote, "connector": x.up.server.ID}
		up, err := s.upstreamNow(ctx, x.up)
		var res *mcp.GetPromptResult
		if err == nil {
			res, err = up.getPrompt(ctx, x.remote, req.Params.Arguments)
		}
		s.note(ctx, "prompts/get", args, err)
		if err != nil {
			return nil, errors.New(s.secrets.Redact(err.Error()))
		}
		s.redactPrompt(res)
		return res, nil
	}
}

// subscribe passes a resource subscription to the upstream that serves the resource. A URI
// the upstreams did not list (resources can exist without being listed) goes to the first
// upstream the session reaches that takes subscriptions and accepts it.
func (s *session) subscribe(ctx context.Context, uri string, on bool) error {
	s.mu.Lock()
	held := s.subs[uri]
	reached := s.reached
	s.mu.Unlock()
	if !on {
		if held == nil {
			return nil // nothing to stop
		}
		s.mu.Lock()
		delete(s.subs, uri)
		s.mu.Unlock()
		return held.subscribe(ctx, uri, false)
	}
	if held != nil {
		return nil // already subscribed
	}
	candidates := reached
	if u := s.owner(uri); u != nil {
		candidates = []*upstream{u}
	}
	err := fmt.Errorf("no upstream of this session serves %s", uri)
	for _, u := range candidates {
		if !u.subscribes(ctx) {
			continue
		}
		if err = u.subscribe(ctx, uri, true); err == nil {
			s.mu.Lock()
			if s.subs == nil {
				s.subs = map[string]*upstream{}
			}
			s.subs[uri] = u
			s.mu.Unlock()
			return nil
		}
	}
	return err
}

// unsubscribeAll ends the session's subscriptions, when it ends.
func (s *session) unsubscribeAll(ctx context.Context) {
	s.mu.Lock()
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for uri, u := range subs {
		if err := u.subscribe(ctx, uri, false); err != nil {
			s.g.logger.Warn("a resource subscription could not be ended", "uri", uri, "err", err)
		}
	}
}

// owner is the upstream of a resource the session passes through (by exact URI, else by a
// template's URI prefix), or nil.
func (s *session) owner(uri string) *upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.extras["resource\x00"+uri]; ok {
		return x.up
	}
	for _, x := range s.extras {
		if x.kind == "template" {
			if i := strings.IndexByte(x.key, '{'); i > 0 && strings.HasPrefix(uri, x.key[:i]) {
				return x.up
			}
		}
	}
	return nil
}

// serves reports whether the session passes the resource through, or subscribed to it.
func (s *session) serves(uri string) bool {
	s.mu.Lock()
	_, subscribed := s.subs[uri]
	s.mu.Unlock()
	return subscribed || s.owner(uri) != nil
}

// note records a passed-through read (a resource, a prompt): who read what, and whether it
// worked.
func (s *session) note(ctx context.Context, what string, args map[string]any, err error) {
	gs := s.gs.Load()
	sf := gs.Review.Surface
	e := &audit.Event{Time: s.g.o.Gate.Now(), Kind: audit.KindOutcome, Tenant: sf.Tenant().ID, Session: s.id,
		Principal: gs.Principal, Role: sf.Role().ID, Tool: what, Digest: action.Digest(what, args),
		Outcome: "ok", PolicyRevision: sf.Policy().Revision}
	if err != nil {
		e.Outcome, e.Error = "error", s.secrets.Redact(err.Error())
	}
	if err := s.g.o.Store.Append(context.WithoutCancel(ctx), e); err != nil {
		s.g.logger.Error("a passed-through read could not be recorded", "what", what, "err", err)
	}
}

func newEntry(t *policy.Tool, def *mcp.Tool, u *upstream, remote string) *entry {
	e := &entry{tool: t, def: def, up: u, remote: remote}
	b, _ := json.Marshal(def)
	e.digest = string(b)
	e.schema = compileSchema(def.InputSchema)
	if u != nil {
		var in struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if b, err := json.Marshal(def.InputSchema); err == nil && json.Unmarshal(b, &in) == nil {
			_, e.binds = in.Properties[protectedBindings]
		}
	}
	return e
}

// protectedBindings is the argument that binds names to protected:// handles.
const protectedBindings = "protectedBindings"

// compileSchema compiles a tool's input schema for checking arguments; a schema that cannot be
// compiled (a remote reference, a dialect the validator does not know) is left to the tool.
//
// The validator is the one the go-sdk itself uses (github.com/google/jsonschema-go), which
// knows draft 2020-12 (a schema that names no dialect is read as one) and draft-07, what MCP
// servers write (the TypeScript SDK's zod schemas are draft-07; the Go and Python SDKs' are
// 2020-12). A schema of another draft is not guessed at: it is left to the tool. It validates
// a string without copying it, and costs a process nothing at start, where a validator that
// compiles its meta-schemas in an init function costs every warden command (a Claude Code
// hook runs one per tool call) several milliseconds.
func compileSchema(schema any) *jsonschema.Resolved {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var doc jsonschema.Schema
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil
	}
	switch strings.TrimSuffix(doc.Schema, "#") {
	case "", "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema":
	default:
		return nil
	}
	r, err := doc.Resolve(nil)
	if err != nil {
		return nil
	}
	return r
}

// renamed is an upstream's tool under its namespaced name.
func renamed(def *mcp.Tool, name string, t *policy.Tool) *mcp.Tool {
	c := *def
	c.Name = name
	c.Annotations = policyAnnotations(t, def.Annotations)
	if c.InputSchema == nil {
		c.InputSchema = map[string]any{"type": "object"}
	}
	return &c
}

// nativeAnnotations describe a built-in's effect to the client.
func nativeAnnotations(t *policy.Tool) *mcp.ToolAnnotations {
	read := t.Effect == policy.EffectRead
	a := &mcp.ToolAnnotations{ReadOnlyHint: read}
	if !read {
		destructive := t.Effect == policy.EffectDelete || t.Effect == policy.EffectExecute || t.Kind == "files_write" || t.Kind == "files_patch"
		a.DestructiveHint = &destructive
	}
	open := t.Kind == "net_fetch" || t.Kind == "net_search" || t.Kind == "shell_exec"
	a.OpenWorldHint = &open
	return a
}

// upstreamNow returns the upstream a call of this session goes to, for the upstream its list was
// made with: that one, but for a sandboxed connector, the process that serves the session's
// tenant under the hard blocks in force now (pool.get), which may be another since the list
// was made (the blocks changed).
func (s *session) upstreamNow(ctx context.Context, u *upstream) (*upstream, error) {
	if !u.server.Sandbox || u.sandbox.rules == nil {
		return u, nil
	}
	return s.g.upstream.get(ctx, u.server, u.cred, s.gs.Load().Review.Surface.Tenant().ID)
}

// upstream returns the connected upstream of a connector for this session's credential, or nil
// (logged) when it cannot be connected: its tools are not listed, and nothing else is held up.
func (s *session) upstream(ctx context.Context, sf *surface.Surface, srv *policy.Server) *upstream {
	cred, err := s.g.credential(sf, srv)
	if err != nil {
		s.g.logger.Warn("a connector's credential could not be resolved; its tools are not listed",
			"connector", srv.ID, "session", s.id, "err", err)
		return nil
	}
	u, err := s.g.upstream.get(ctx, srv, cred, sf.Tenant().ID)
	if errors.Is(err, errConnecting) {
		if len(u.catalog()) > 0 {
			// Reconnecting after it went away: its last catalog stays listed, and a call
			// waits for the connection.
			err = nil
		} else {
			// Its tools are listed when the dial ends (the sessions are synced again then).
			s.g.logger.Debug("a connector is still connecting; its tools are not listed yet", "connector", srv.ID, "session", s.id)
			return nil
		}
	}
	if err != nil {
		s.g.logger.Warn("a connector could not be reached; its tools are not listed", "connector", srv.ID, "err", err)
		return nil
	}
	if v := cred.value.Reveal(); v != "" {
		s.secrets.Add(secret.TypeCredential, cred.value)
	}
	for _, kv := range cred.host {
		if _, v, _ := strings.Cut(kv, "="); v != "" {
			s.secrets.Add(secret.TypeCredential, secret.New(v))
		}
	}
	return u
}

// middleware watches what the SDK does not route to a tool: it learns the session's
// connection at initialize (and names its run in the result), records the usage a call
// carries in its _meta before the call is judged, and answers calls of tools the session does
// not list, recording each (the SDK alone would answer without a trace).
func (s *session) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			if err := s.checkStated(req); err != nil {
				return nil, err
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && s.ss.CompareAndSwap(nil, ss) {
				go func() {
					_ = ss.Wait()
					s.end(context.Background())
				}()
			}
			res, err := next(ctx, method, req)
			if err == nil {
				s.initialized(res)
			}
			return res, err
		case "tools/call":
			p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
			if p == nil {
				break
			}
			if refused := s.reportMeta(ctx, p.Name, p.Meta); refused != nil {
				return refused, nil
			}
			s.mu.Lock()
			_, listed := s.tools[p.Name]
			s.mu.Unlock()
			if !listed {
				return s.unlisted(ctx, p.Name), nil
			}
		}
		return next(ctx, method, req)
	}
}

// unlisted refuses a call of a tool the session does not list: outside its surface
// (permission_denied), withheld because its upstream changed its pinned definition
// (pin_mismatch), or one Warden cannot serve (unsupported_tool).
func (s *session) unlisted(ctx context.Context, name string) *mcp.CallToolResult {
	gs := s.gs.Load()
	code, detail := verdict.PermissionDenied, "the tool is not part of this session's surface"
	if sf := gs.Review.Surface; sf.Has(name) {
		code, detail = verdict.UnsupportedTool, "the tool is in the surface, but Warden does not serve it now (its upstream is not connected or no longer lists it, or the harness runs it)"
		if why, held := s.pinHeldFor(ctx, sf, name); held {
			code, detail = verdict.PinMismatch, why
		}
	}
	s.record(ctx, name, nil, code, detail)
	return refusal([]review.Blocker{{Code: code, Detail: detail, Decision: verdict.Deny}})
}

// record appends a denial the gateway decided itself (before the gate).
func (s *session) record(ctx context.Context, tool string, args map[string]any, code verdict.Code, detail string) error {
	gs := s.gs.Load()
	sf := gs.Review.Surface
	e := &audit.Event{Time: s.g.o.Gate.Now(), Kind: audit.KindDecision, Tenant: sf.Tenant().ID, Session: s.id,
		Principal: gs.Principal, Role: sf.Role().ID, Tool: tool, Digest: action.Digest(tool, args),
		Decision: verdict.Deny.String(), Blockers: []audit.Blocker{{Code: string(code), Detail: detail}},
		PolicyRevision: sf.Policy().Revision}
	if pr := sf.Profile(); pr != nil {
		e.Profile = pr.ID
	}
	if gs.Run != nil {
		e.Run = gs.Run.ID
	}
	err := s.g.o.Store.Append(context.WithoutCancel(ctx), e)
	if err != nil {
		s.g.logger.Error("a refused call could not be recorded", "tool", tool, "err", err)
	}
	return err
}

// refusal is the result the model sees for a call that did not run.
func refusal(blockers []review.Blocker) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: "Warden did not run this call:\n" + describe(blockers)}}}
}

// handle runs one call of a listed tool for the SDK's server (see serveCall).
func (s *session) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := s.serveCall(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.toSDK()
}

// serveCall runs one call of a listed tool: the pipeline of the gate (review, approval, money,
// audit, execution with the review token), with the result protected before the model sees it.
func (s *session) serveCall(ctx context.Context, req *mcp.CallToolRequest) (callOutcome, error) {
	name := req.Params.Name
	s.mu.Lock()
	e := s.tools[name]
	s.mu.Unlock()
	if e == nil {
		return callOutcome{sdk: s.unlisted(ctx, name)}, nil
	}
	args := map[string]any{}
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return callOutcome{sdk: s.invalid(ctx, name, nil, "the arguments are not JSON: "+err.Error())}, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return callOutcome{sdk: s.invalid(ctx, name, nil, "the arguments must be a JSON object")}, nil
		}
		args = m
	}
	if e.schema != nil {
		if err := e.schema.Validate(args); err != nil {
			why := strings.TrimPrefix(err.Error(), "validating root: ") // every error starts so
			return callOutcome{sdk: s.invalid(ctx, name, args, "the arguments do not match the tool's input schema: "+why)}, nil
		}
	}

	if !s.g.admitCall() {
		detail := errShuttingDown.Error() + "; the call did not run"
		s.record(ctx, name, args, verdict.Unavailable, detail)
		return callOutcome{sdk: refusal([]review.Blocker{{Code: verdict.Unavailable, Detail: detail, Decision: verdict.Deny}})}, nil
	}
	ctx, cancel, release := s.callContext(ctx, req)
	defer release()
	w := s.wait(req, action.Digest(name, args), cancel)
	defer s.unwait(w)
	out, err := s.g.o.Gate.Call(ctx, s.current(), name, args, func(ctx context.Context, a *action.Action) (map[string]any, error) {
		return s.run(ctx, e, a, args, len(req.Params.Arguments))
	})
	switch {
	case out == nil:
		return callOutcome{}, err
	case out.Verdict.Decision == verdict.Deny:
		return callOutcome{sdk: refusal(out.Verdict.Blockers)}, nil
	case err != nil && !out.Ran:
		return callOutcome{sdk: refusal([]review.Blocker{{Code: verdict.NotRecorded, Detail: err.Error(), Decision: verdict.Deny}})}, nil
	case out.Err != nil:
		return callOutcome{sdk: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: s.secrets.Redact(out.Err.Error())}}}}, nil
	}
	return callOutcome{plain: out.Result}, nil
}

// invalid refuses a call whose arguments are malformed, and records it.
func (s *session) invalid(ctx context.Context, name string, args map[string]any, detail string) *mcp.CallToolResult {
	s.record(ctx, name, args, verdict.InvalidInput, detail)
	return refusal([]review.Blocker{{Code: verdict.InvalidInput, Detail: detail, Decision: verdict.Deny}})
}

// run executes a call that passed the gate, and protects its result: envelopes become handles,
// known values are redacted, and a malformed envelope withholds the whole result. size is how
// large the arguments were as the client sent them (a hint for the buffer they are sent in).
func (s *session) run(ctx context.Context, e *entry, a *action.Action, args map[string]any, size int) (map[string]any, error) {
	var res any
	switch {
	case a.Kind == "spawn_subagent":
		r, err := s.spawn(ctx, a)
		if err != nil {
			return nil, err
		}
		res = r
	case a.Kind == kindAllowHost:
		r, err := s.allowHost(ctx, a)
		if err != nil {
			return nil, err
		}
		res = r
	case e.up == nil:
		env, release, err := s.bindings(ctx, e.tool, args)
		if err != nil {
			return nil, err
		}
		defer release()
		r, err := s.exec.Run(ctx, a, env)
		if err != nil {
			return nil, errors.New(s.secrets.Redact(err.Error()))
		}
		s.recordRefusals(ctx, a.Tool, args, r.Refusals, r.RefusalsDropped)
		m := map[string]any{"content": []any{map[string]any{"type": "text", "text": r.Text}}}
		if r.Structured != nil {
			v, err := plain(r.Structured)
			if err != nil {
				return nil, fmt.Errorf("the result of %s cannot be encoded: %w", a.Tool, err)
			}
			m["structuredContent"] = v
		}
		if r.IsError {
			m["isError"] = true
		}
		res = m
	default:
		send := args
		if e.binds {
			values, err := s.resolveBindings(ctx, protectedBindings, args[protectedBindings])
			if err != nil {
				return nil, err
			}
			if values != nil {
				// The values go to the upstream in this call only; the audit trail, and
				// anything the model sees, hold the handles.
				send = maps.Clone(args)
				bound := make(map[string]any, len(values))
				for k, v := range values {
					bound[k] = v
				}
				send[protectedBindings] = bound
			}
		}
		up, err := s.upstreamNow(ctx, e.up)
		if err != nil {
			return nil, errors.New(s.secrets.Redact(err.Error()))
		}
		r, err := up.callPlain(ctx, e.remote, send, s.callerMeta(), e.tool.Effect == policy.EffectRead, size)
		if err != nil {
			return nil, errors.New(s.secrets.Redact(err.Error()))
		}
		res = r
	}
	return s.protect(res, e.tool.Server.ID)
}

// plain turns a value into decoded JSON (maps, slices, strings, float64s, bools and nils), the
// form protection walks.
func plain(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// plainText is plain(r) for a result of text content only, the usual one, made without
// encoding and decoding it (ok is false for any other result, which plain takes). A result
// type of "complete" is not kept: the SDK sets the type of what Warden answers itself, and
// an unset one means complete.
func plainText(r *mcp.CallToolResult) (map[string]any, bool) {
	if r.Content == nil || len(r.Meta) > 0 || r.StructuredContent != nil || r.NeedsInput() || r.InputRequests != nil ||
		r.RequestState != "" {
		return nil, false
	}
	content := make([]any, len(r.Content))
	for i, c := range r.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok || len(tc.Meta) > 0 || tc.Annotations != nil {
			return nil, false
		}
		content[i] = map[string]any{"type": "text", "text": tc.Text}
	}
	m := map[string]any{"content": content}
	if r.IsError {
		m["isError"] = true
	}
	return m, true
}

// protect turns envelopes into handles (in structured content, and in text content that is a
// JSON document) and redacts every known value, in one pass: on a malformed envelope anywhere,
// nothing of the result is kept, and no handle made from it survives.
func (s *session) protect(res any, source string) (map[string]any, error) {
	m, ok := res.(map[string]any)
	if !ok {
		return nil, errors.New("the tool returned something that is not a result object")
	}
	// The texts that declare something are decoded, to be protected with the rest.
	type textPart struct {
		item map[string]any
		at   int
	}
	var texts []textPart
	var decoded []any
	content, _ := m["content"].([]any)
	for _, c := range content {
		item, ok := c.(map[string]any)
		if !ok {
			continue
		}
		text, ok := item["text"].(string)
		if !ok || !declares(text) {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil || dec.More() {
			continue // not one JSON document: plain text, redacted below
		}
		texts = append(texts, textPart{item: item, at: len(decoded)})
		decoded = append(decoded, v)
	}
	all, err := s.secrets.ProtectFrom(source, map[string]any{"structured": m["structuredContent"], "texts": decoded})
	if err != nil {
		return nil, fmt.Errorf("the result was withheld: %w", err)
	}
	protected := all.(map[string]any)
	if _, ok := m["structuredContent"]; ok {
		m["structuredContent"] = protected["structured"]
	}
	if len(texts) > 0 {
		list := protected["texts"].([]any)
		for _, t := range texts {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(list[t.at]); err != nil {
				return nil, fmt.Errorf("the result was withheld: %w", err)
			}
			t.item["text"] = strings.TrimSuffix(b.String(), "\n")
		}
	}
	out, err := s.redactResult(m)
	if err != nil {
		return nil, fmt.Errorf("the result was withheld: %w", err)
	}
	return out, nil
}

// declares reports whether a text mentions a declaration key.
func declares(text string) bool {
	for _, k := range []string{secret.KeySensitive, secret.KeySensitiveBurrow, secret.KeyManaged, secret.KeyManagedBurrow} {
		if strings.Contains(text, k) {
			return true
		}
	}
	return false
}

// bindings resolves a call's protectedBindings for that process only (placeholders.go).
func (s *session) bindings(ctx context.Context, t *policy.Tool, args map[string]any) (map[string]string, func(), error) {
	field, ok := t.Input["protectedBindings"]
	if !ok {
		return nil, func() {}, nil
	}
	env, err := s.resolveBindings(ctx, field, args[field])
	if err != nil || len(env) == 0 {
		return env, func() {}, err
	}
	return s.placehold(env, args[field].(map[string]any))
}

// resolveBindings resolves an argument of names to protected:// handles into the values, for
// one process or one call.
func (s *session) resolveBindings(ctx context.Context, field string, raw any) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be an object of variable names to protected:// handles", field)
	}
	handles := make(map[string]string, len(m))
	for k, v := range m {
		h, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s must be a protected:// handle", field, k)
		}
		handles[k] = h
	}
	// Managed references are fetched from their provider, each checked (issuer, version,
	// lifetime, scope, current authorisation) on this use; the rest are the registry's values.
	env := make(map[string]string, len(handles))
	for k, h := range handles {
		if !secret.IsManaged(h) {
			continue
		}
		v, err := s.secrets.ResolveManaged(ctx, h, s.g.o.Gate.Now(), managedAuthz{s}, s.providers())
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", field, k, err)
		}
		env[k] = v.Reveal()
		delete(handles, k)
	}
	values, err := s.secrets.Resolve(handles)
	if err != nil {
		return nil, s.unresolved(field, handles, err)
	}
	for k, v := range values {
		env[k] = v.Reveal()
	}
	return env, nil
}

// unresolved names the first handle (by variable name) that could not be resolved, and says
// why in words a client can act on: a session served by several instances resolves only the
// handles this instance issued (protected values are never stored).
func (s *session) unresolved(field string, handles map[string]string, err error) error {
	for _, k := range slices.Sorted(maps.Keys(handles)) {
		h := handles[k]
		_, herr := s.secrets.Resolve(map[string]string{k: h})
		if herr == nil {
			continue
		}
		if s.g.shared() && (errors.Is(herr, secret.ErrForeignHandle) || errors.Is(herr, secret.ErrUnknownHandle)) {
			return fmt.Errorf("%s.%s: the protected handle %s is not held by this instance of Warden: protected values live only "+
				"in the memory of the instance that issued them (never in the store), and this session's requests reach other "+
				"instances, or the one that issued it has stopped; fetch the value again to get a handle this instance holds: %w", field, k, h, herr)
		}
		return fmt.Errorf("%s.%s: %s: %w", field, k, h, herr)
	}
	return err
}

// toResult decodes a result map into the SDK's type.
func toResult(m map[string]any) (*mcp.CallToolResult, error) {
	if r, ok := textResult(m); ok {
		return r, nil
	}
	return decodeResult(m)
}

// decodeResult is toResult for any result: through JSON, as the SDK reads one.
func decodeResult(m map[string]any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(b, &r); err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: "the tool's result is not a valid MCP result: " + err.Error()}}}, nil
	}
	if r.Content == nil {
		r.Content = []mcp.Content{}
	}
	return &r, nil
}

// textResult is toResult for a result of text content only (no other key than content and
// isError, each content item exactly a type "text" and its text), made without the JSON
// round trip, whose decoding by the SDK allocates 32 KB. ok is false for any other result.
func textResult(m map[string]any) (*mcp.CallToolResult, bool) {
	list, ok := m["content"].([]any)
	if !ok || list == nil {
		return nil, false
	}
	var r mcp.CallToolResult
	for k, v := range m {
		switch k {
		case "content":
		case "isError":
			if r.IsError, ok = v.(bool); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	r.Content = make([]mcp.Content, len(list))
	for i, c := range list {
		item, _ := c.(map[string]any)
		text, ok := item["text"].(string)
		if len(item) != 2 || item["type"] != "text" || !ok {
			return nil, false
		}
		r.Content[i] = &mcp.TextContent{Text: text}
	}
	return &r, true
}

// wait registers a call that may wait for a person, so that the card it parks is announced to
// the client with progress notifications.
func (s *session) wait(req *mcp.CallToolRequest, digest string, cancel context.CancelCauseFunc) *waiter {
	w := &waiter{digest: digest, ss: req.Session, token: req.Params.GetProgressToken(), cancel: cancel}
	s.mu.Lock()
	s.waiting[digest+"\x00"+fmt.Sprintf("%p", w)] = w
	s.mu.Unlock()
	return w
}

func (s *session) unwait(w *waiter) {
	s.mu.Lock()
	delete(s.waiting, w.digest+"\x00"+fmt.Sprintf("%p", w))
	s.mu.Unlock()
}

// progressEvery is how often a call waiting for a person says it is still waiting.
const progressEvery = 10 * time.Second

// onCard hears of a card of this session: calls waiting on it tell their client, and a
// session whose role lets it answer its own cards is asked in its client (elicitation).
func (s *session) onCard(c *approval.Card) {
	s.mu.Lock()
	var ws []*waiter
	for _, w := range s.waiting {
		if w.digest == c.Digest {
			ws = append(ws, w)
		}
	}
	s.mu.Unlock()
	s.g.mu.Lock()
	draining := s.g.draining
	s.g.mu.Unlock()
	for _, w := range ws {
		first := w.card.Swap(c) == nil
		if c.State != approval.Pending || !first {
			continue
		}
		if draining {
			w.cancel(errDrainedAnswer) // the server is going away: nobody would see the answer
			continue
		}
		if w.token != nil {
			go s.progress(w, c)
		}
		if s.canElicit(w.ss) {
			go s.elicit(w.ss, c)
		}
	}
}

// progress tells the client, while the card is pending, that the call waits for a person.
func (s *session) progress(w *waiter, c *approval.Card) {
	ctx := context.Background()
	for n := 1.0; ; n++ {
		msg := fmt.Sprintf("waiting for a person to answer approval card %s (%s) until %s", c.ID, c.Reason, c.Deadline.Format(time.RFC3339))
		p := &mcp.ProgressNotificationParams{ProgressToken: w.token, Progress: n, Message: msg}
		if err := w.ss.NotifyProgress(ctx, p); err != nil && !s.relay(ctx, "progress", p) {
			return
		}
		time.Sleep(progressEvery)
		if cur := w.card.Load(); cur == nil || cur.State != approval.Pending {
			return
		}
		s.mu.Lock()
		_, live := s.waiting[w.digest+"\x00"+fmt.Sprintf("%p", w)]
		s.mu.Unlock()
		if !live {
			return
		}
	}
}

// canElicit: the session may answer its own cards by elicitation (its role's
// approvalByElicitation, an approval channel, not a child), and its client declared it can be
// asked. Whether a person or a program answers in the client cannot be seen from here: the
// policy's field is where an operator says which clients show the question to a person.
func (s *session) canElicit(ss *mcp.ServerSession) bool {
	gs := s.gs.Load()
	if ss == nil || !gs.Review.Surface.ApprovalByElicitation() {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// elicit asks the session's client to answer the card: accept with allow_once allows, any
// other accept and a decline deny, a cancel leaves the card for another channel.
func (s *session) elicit(ss *mcp.ServerSession, c *approval.Card) {
	ctx, cancel := context.WithDeadline(context.Background(), c.Deadline)
	defer cancel()
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Message: fmt.Sprintf("Warden asks before running %s: %s\nArguments: %s", c.Tool, c.Reason, c.Args),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"decision": map[string]any{"type": "string", "title": "Decision", "enum": []string{string(approval.AllowOnce), string(approval.Deny)}},
		}, "required": []string{"decision"}},
	})
	if err != nil {
		s.g.logger.Debug("the client could not be asked; the card waits for the API", "card", c.ID, "err", err)
		return
	}
	answer := approval.Deny
	if res.Action == "accept" && res.Content["decision"] == string(approval.AllowOnce) {
		answer = approval.AllowOnce
	} else if res.Action == "cancel" {
		return // dismissed: the card still waits for an answer elsewhere
	}
	gs := s.gs.Load()
	if _, err := s.g.o.Broker.Answer(ctx, c.Tenant, c.ID, answer, gs.Principal, approval.ChannelElicitation, c.Digest); err != nil {
		s.g.logger.Debug("an elicited answer was not taken", "card", c.ID, "err", err)
	}
}

// end ends the session: its calls, its run, its children, its protected values.
func (s *session) end(ctx context.Context) { s.endFor(ctx, errSessionEnded) }

// endFor ends the session, its calls ending with why.
func (s *session) endFor(ctx context.Context, why error) { s.finish(ctx, why, true) }

// drop ends this instance's copy of a session kept in the store (shared.go), its calls here
// ending with why, and leaves the session, its run and its subagents' tokens to the others. A
// session not kept in the store has no other copy: drop ends it.
func (s *session) drop(ctx context.Context, why error) { s.finish(ctx, why, !s.g.shared()) }

// busy reports whether a request of the session is being served here.
func (s *session) busy() bool {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	return s.idleRefs > 0
}

// finish ends the session here; global ends it everywhere (its record, its run).
func (s *session) finish(ctx context.Context, why error, global bool) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	kids := s.kids
	s.mu.Unlock()
	s.idleMu.Lock()
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.idleMu.Unlock()
	s.stop(why)
	g := s.g
	g.mu.Lock()
	g.release(s)
	delete(g.sessions, s.id)
	if id := s.mcpID.Load(); id != nil && g.byMCP[*id] == s {
		delete(g.byMCP, *id)
	}
	for _, c := range kids {
		delete(g.children, c.hash)
	}
	var kidSessions []*session
	for _, o := range g.sessions {
		if o.child != nil && slices.Contains(kids, o.child) {
			kidSessions = append(kidSessions, o)
		}
	}
	g.mu.Unlock()
	for _, k := range kidSessions {
		k.finish(ctx, why, global)
		if ss := k.ss.Load(); ss != nil {
			_ = ss.Close()
		}
	}
	s.unsubscribeAll(context.WithoutCancel(ctx))
	s.closeNet()
	switch {
	case !global:
	case !g.shared():
		s.endRun(ctx)
	case g.endStored(ctx, s, why):
		s.endRun(ctx) // this instance ended the session: its run is this instance's to end
	}
	if s.secrets != nil {
		s.secrets.Forget()
	}
	g.logger.Info("session ended", "session", s.id)
}

func (s *session) endRun(ctx context.Context) {
	if gs := s.gs.Load(); gs != nil && gs.Run != nil {
		if err := s.g.o.Gate.EndRun(context.WithoutCancel(ctx), gs); err != nil {
			s.g.logger.Error("a run could not be ended", "session", s.id, "err", err)
		}
	}
}

// OnCard routes a card to the session that parked it, whose waiting call tells its client
// (wire it as approval.Options.OnCard).
func (g *Gateway) OnCard(c *approval.Card) {
	g.mu.Lock()
	s := g.sessions[c.Session]
	g.mu.Unlock()
	if s != nil {
		s.onCard(c)
	}
}
