package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/sandbox"
	"github.com/wardenhq/warden/secret"
)

// An upstream is one connection to a connector's MCP server, for one credential: sessions of
// the tenants that resolve to the same credential share it. Its catalog is discovered when it
// connects. A call that fails on a broken connection reconnects once; a call that hangs ends
// at the connector's timeout without holding anything other calls need.
type upstream struct {
	key    string
	server *policy.Server
	cred   credential
	// tenant is set for a sandboxed connector's process that serves this tenant alone, under
	// its hard blocks (connectorSandbox.rules), and enforcing is the set its process enforces.
	tenant    string
	enforcing *boundary.Set
	logger    *slog.Logger
	onList    func() // the catalog changed: sessions sync their tools
	// sandbox is how a stdio process runs when the connector says sandbox: true.
	sandbox connectorSandbox
	sdkOnly bool
	// hc carries an HTTP upstream's requests (with its credential), for the lean hop; nil for
	// a stdio upstream, and when the pool's sdkOnly is set.
	hc *http.Client
	// lean counts the calls made on the lean hop.
	lean *atomic.Uint64
	// openStreams: the upstream kept its event streams open after a call's response (see
	// drainStream), so the lean hop no longer waits for the end of its streams; drainTimeouts
	// counts the streams in a row that outlasted the wait.
	openStreams   atomic.Bool
	drainTimeouts atomic.Int32

	mu      sync.Mutex
	session *mcp.ClientSession
	tools   map[string]*mcp.Tool // by the upstream's own tool name
	// The upstream's resources, resource templates and prompts, passed through to sessions
	// that hold any of its tools.
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
	onUpdate  func(*mcp.ResourceUpdatedNotificationParams)
	subs      map[string]int // resource subscriptions, by URI: how many sessions hold each
	dialing   chan struct{}  // closed when the dial in progress ends; nil when none is
	err       error          // the last connect error, while not connected
	retryAt   time.Time
	errs      *counts // the pool's count of failed calls
	// closed: the gateway closed this upstream; no dial may leave a session behind after it.
	closed bool
}

// errUpstreamClosed: the gateway is closing, and its upstreams with it.
var errUpstreamClosed = errors.New("the gateway is closing")

// credential is what a session hands an upstream: a value (for own and shared connections)
// or the host environment's variables (for the owner's tenant).
type credential struct {
	id    string        // what identifies it in the pool: a connection id, "host", or ""
	value secret.Secret // the connection's secret
	host  []string      // KEY=VALUE of the connector's hostEnv, for the host source
}

// pool holds the upstreams of a gateway.
type pool struct {
	logger   *slog.Logger
	mu       sync.Mutex
	all      map[string]*upstream
	onList   func()
	onUpdate func(*mcp.ResourceUpdatedNotificationParams)
	// sandbox is how the stdio processes of connectors with sandbox: true run (the zero
	// value: the full sandbox, with the egress defaults). Set before the first get.
	sandbox connectorSandbox
	// errs counts the calls that failed at an upstream, by connector.
	errs counts
	// sdkOnly makes every call through the SDK's client (tests compare the two hops with it).
	sdkOnly bool
	// lean counts the calls made on the lean hop.
	lean atomic.Uint64
	// closed: closeAll ran; no upstream is opened after it.
	closed bool
}

func newPool(logger *slog.Logger, onList func(), onUpdate func(*mcp.ResourceUpdatedNotificationParams)) *pool {
	return &pool{logger: logger, all: map[string]*upstream{}, onList: onList, onUpdate: onUpdate}
}

// get returns the upstream for a server and credential, connecting it if it is not, for a
// session of tenant. A sandboxed connector's process serves every tenant that resolves to its
// credential, but one whose tenant has hard blocks serves that tenant alone, and enforces its
// blocks at the system call (connectorSandbox.rules); once they change, its process is ended
// and the next call starts one under the new blocks.
func (p *pool) get(ctx context.Context, srv *policy.Server, cred credential, tenant string) (*upstream, error) {
	key := srv.ID + "\x00" + cred.id
	var blocks *boundary.Set
	if sb := p.sandbox; srv.Sandbox && !sb.native.Off && sb.rules != nil {
		if blocks = hardBlocks(sb.rules(tenant)); blocks != nil {
			key += "\x00tenant:" + tenant
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("connector %s: %w", srv.ID, errUpstreamClosed)
	}
	u, ok := p.all[key]
	if !ok {
		u = &upstream{key: key, server: srv, cred: cred, logger: p.logger, onList: p.onList, onUpdate: p.onUpdate, sandbox: p.sandbox, errs: &p.errs,
			sdkOnly: p.sdkOnly, lean: &p.lean}
		if blocks != nil {
			u.tenant = tenant
		}
		p.all[key] = u
	}
	p.mu.Unlock()
	if blocks != nil {
		u.mu.Lock()
		cs := u.session
		stale := cs != nil && u.enforcing != blocks
		u.mu.Unlock()
		if stale {
			u.logger.Info("the tenant's hard blocks changed: the sandboxed connector's process is started again under them", "connector", srv.ID, "tenant", tenant)
			u.drop(cs) // not close: that is for good, and this upstream connects again at once
		}
	}
	return u, u.connect(ctx)
}

// hardBlocks is set if it holds rules to enforce (or does not validate, which refuses
// everything), else nil.
func hardBlocks(set *boundary.Set) *boundary.Set {
	if set == nil || set.Invalid() == nil && len(set.Rules()) == 0 {
		return nil
	}
	return set
}

// closeAll closes every upstream.
func (p *pool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, u := range p.all {
		u.close()
	}
}

// retryDelay is how long an upstream that failed to connect is left alone before the next try.
const retryDelay = 5 * time.Second

// errConnecting: the upstream is being dialled, and the caller stopped waiting.
var errConnecting = errors.New("still connecting")

// connect connects the upstream and discovers its catalog, if it is not connected, waiting
// for the dial (its own or one in progress) until ctx ends.
func (u *upstream) connect(ctx context.Context) error {
	for {
		u.mu.Lock()
		if u.session != nil {
			u.mu.Unlock()
			return nil
		}
		if u.closed {
			u.mu.Unlock()
			return fmt.Errorf("connector %s: %w", u.server.ID, errUpstreamClosed)
		}
		if u.dialing == nil {
			if u.err != nil && time.Now().Before(u.retryAt) {
				err := u.err
				u.mu.Unlock()
				return err
			}
			u.dialing = make(chan struct{})
			go u.dialNow(u.dialing)
		}
		dialing := u.dialing
		u.mu.Unlock()
		select {
		case <-dialing:
			// Connected, or failed (and u.err says why): look again.
		case <-ctx.Done():
			return fmt.Errorf("connector %s: %w", u.server.ID, errConnecting)
		}
	}
}

// dialNow dials the upstream in the background, with the connector's own timeout: no caller
// holds a lock while it runs, and a caller that stops waiting does not end it for the others.
// A success tells the sessions (their lists may now hold the connector's tools).
func (u *upstream) dialNow(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), u.server.Upstream.Timeout)
	defer cancel()
	err := u.dial(ctx)
	u.mu.Lock()
	if err != nil {
		u.err, u.retryAt = err, time.Now().Add(retryDelay)
	} else {
		u.err = nil
	}
	u.dialing = nil
	u.mu.Unlock()
	close(done)
	if err == nil && u.onList != nil {
		u.onList()
	}
}

func (u *upstream) dial(ctx context.Context) error {
	up := u.server.Upstream
	if up == nil {
		return fmt.Errorf("connector %s has no upstream configured", u.server.ID)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "warden", Version: Version}, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { go u.refresh() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { go u.refresh() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { go u.refresh() },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if u.onUpdate != nil {
				u.onUpdate(r.Params)
			}
		},
	})
	var transport mcp.Transport
	var sandboxed *sandboxedProcess
	if up.URL != "" {
		hc := &http.Client{Transport: &headerTransport{base: upstreamTransport, header: up.CredentialHeader,
			prefix: up.CredentialPrefix, value: u.credentialValue()}}
		transport = &mcp.StreamableClientTransport{Endpoint: up.URL, HTTPClient: hc, DisableStandaloneSSE: false}
		if !u.sdkOnly {
			u.hc = hc
		}
	} else if u.server.Sandbox && !u.sandbox.native.Off {
		// The connector's process runs in the sandbox, or not at all.
		p, err := u.startSandboxed()
		if err != nil {
			return err
		}
		sandboxed = p
		transport = &mcp.IOTransport{Reader: p.stdout, Writer: p}
	} else {
		if u.server.Sandbox {
			u.logger.Warn("a connector with sandbox: true runs unsandboxed: the operator turned the sandbox off", "connector", u.server.ID)
		}
		// Descriptors Warden's process inherited without close-on-exec would pass into it.
		sandbox.CloseInherited()
		cmd := exec.Command(up.Command[0], up.Command[1:]...)
		cmd.Env = u.env()
		cmd.Stderr = &stderrLog{logger: u.logger, connector: u.server.ID}
		transport = &mcp.CommandTransport{Command: cmd}
	}
	cctx, cancel := context.WithTimeout(ctx, up.Timeout)
	defer cancel()
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil {
		if sandboxed != nil {
			sandboxed.Close() // the SDK closes it on most failures, not all
		}
		return fmt.Errorf("connect to %s: %w", u.server.ID, err)
	}
	l, err := list(cctx, cs)
	if err != nil {
		cs.Close()
		return fmt.Errorf("list the catalog of %s: %w", u.server.ID, err)
	}
	u.mu.Lock()
	if u.closed {
		// Closed while this dial ran (a reconnect in flight as the gateway stopped): the
		// session would outlive the gateway, its event stream open, so it ends here.
		u.mu.Unlock()
		cs.Close()
		return fmt.Errorf("connector %s: %w", u.server.ID, errUpstreamClosed)
	}
	u.session = cs
	u.setListing(l)
	u.mu.Unlock()
	go func() {
		// When the upstream goes away, the next call reconnects.
		_ = cs.Wait()
		u.mu.Lock()
		if u.session == cs {
			u.session = nil
		}
		u.mu.Unlock()
	}()
	return nil
}

// A listing is what an upstream offers.
type listing struct {
	tools     map[string]*mcp.Tool
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// list reads an upstream's catalog: its tools, and its resources and prompts if it has them.
func list(ctx context.Context, cs *mcp.ClientSession) (*listing, error) {
	l := &listing{tools: map[string]*mcp.Tool{}}
	caps := &mcp.ServerCapabilities{}
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil {
		caps = r.Capabilities
	}
	if caps.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, err
			}
			l.tools[t.Name] = t
		}
	}
	if caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return nil, err
			}
			l.resources = append(l.resources, r)
		}
		for t, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return nil, err
			}
			l.templates = append(l.templates, t)
		}
	}
	if caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, err
			}
			l.prompts = append(l.prompts, p)
		}
	}
	return l, nil
}

// setListing keeps a listing; u.mu is held.
func (u *upstream) setListing(l *listing) {
	u.tools, u.resources, u.templates, u.prompts = l.tools, l.resources, l.templates, l.prompts
}

// extras returns the upstream's resources, templates and prompts.
func (u *upstream) extras() ([]*mcp.Resource, []*mcp.ResourceTemplate, []*mcp.Prompt) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.resources, u.templates, u.prompts
}

// client returns the connected session, connecting if needed.
func (u *upstream) client(ctx context.Context) (*mcp.ClientSession, error) {
	if err := u.connect(ctx); err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session == nil {
		return nil, fmt.Errorf("connector %s is not connected", u.server.ID)
	}
	return u.session, nil
}

// readResource reads one of the upstream's resources, with its timeout.
func (u *upstream) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	cs, err := u.client(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, u.server.Upstream.Timeout)
	defer cancel()
	return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

// getPrompt gets one of the upstream's prompts, with its timeout.
func (u *upstream) getPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	cs, err := u.client(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, u.server.Upstream.Timeout)
	defer cancel()
	return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
}

// subscribe asks the upstream for updates of a resource (or stops them). Sessions share an
// upstream, so subscriptions are counted: the upstream is asked when the first session
// subscribes and told when the last one unsubscribes.
func (u *upstream) subscribe(ctx context.Context, uri string, on bool) error {
	u.mu.Lock()
	n := u.subs[uri]
	switch {
	case on && n > 0, !on && n > 1:
		if on {
			u.subs[uri]++
		} else {
			u.subs[uri]--
		}
		u.mu.Unlock()
		return nil
	case !on && n == 0:
		u.mu.Unlock()
		return nil
	}
	u.mu.Unlock()
	cs, err := u.client(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, u.server.Upstream.Timeout)
	defer cancel()
	if on {
		err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	} else {
		err = cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}
	if err != nil {
		return err
	}
	u.mu.Lock()
	if u.subs == nil {
		u.subs = map[string]int{}
	}
	if on {
		u.subs[uri]++
	} else if u.subs[uri]--; u.subs[uri] <= 0 {
		delete(u.subs, uri)
	}
	u.mu.Unlock()
	return nil
}

// subscribes reports whether the upstream says it takes resource subscriptions.
func (u *upstream) subscribes(ctx context.Context) bool {
	cs, err := u.client(ctx)
	if err != nil {
		return false
	}
	r := cs.InitializeResult()
	return r != nil && r.Capabilities != nil && r.Capabilities.Resources != nil && r.Capabilities.Resources.Subscribe
}

// refresh lists the catalog again after the upstream said it changed.
func (u *upstream) refresh() {
	u.mu.Lock()
	cs := u.session
	u.mu.Unlock()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), u.server.Upstream.Timeout)
	defer cancel()
	l, err := list(ctx, cs)
	if err != nil {
		u.logger.Warn("an upstream's catalog changed and could not be listed again", "connector", u.server.ID, "err", err)
		return
	}
	u.mu.Lock()
	u.setListing(l)
	u.mu.Unlock()
	if u.onList != nil {
		u.onList()
	}
}

// catalog returns the discovered tools (nil if not connected).
func (u *upstream) catalog() map[string]*mcp.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tools
}

// call calls one tool, with the connector's timeout, through the SDK.
//
// A call that finds the connection broken is tried once more on a new connection only when
// retry is set (the tool only reads): a write may already have happened before the upstream
// went away, and doing it twice is worse than failing.
//
// meta goes with the call as its _meta: who is calling (see callerMeta).
func (u *upstream) call(ctx context.Context, name string, args map[string]any, meta mcp.Meta, retry bool) (res *mcp.CallToolResult, err error) {
	err = u.attempt(ctx, retry, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: name, Arguments: args})
		return err
	})
	return res, err
}

// callPlain is call with the result in plain form (decoded JSON, what protection walks); size
// is a hint of how large the arguments are, encoded. For
// an HTTP upstream on a protocol version the lean hop speaks, the call is one POST written and
// read by Warden (upstream_lean.go); otherwise it goes through the SDK.
func (u *upstream) callPlain(ctx context.Context, name string, args map[string]any, meta mcp.Meta, retry bool, size int) (res map[string]any, err error) {
	err = u.attempt(ctx, retry, func(ctx context.Context, cs *mcp.ClientSession) error {
		if version, ok := u.leanCapable(cs); ok {
			u.lean.Add(1)
			res, err = u.leanCall(ctx, cs, version, name, args, meta, size)
			return err
		}
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: name, Arguments: args})
		if err != nil {
			return err
		}
		if m, ok := plainText(r); ok {
			res = m
			return nil
		}
		v, err := plain(r)
		if err != nil {
			return fmt.Errorf("the result of %s cannot be read: %w", name, err)
		}
		if res, _ = v.(map[string]any); res == nil {
			return fmt.Errorf("the result of %s is not an object", name)
		}
		return nil
	})
	return res, err
}

// attempt runs one call on the upstream's connection, with the connector's timeout, dialling
// first if it is not connected, and once more on a new connection when the first broke and
// retry is set (see call).
func (u *upstream) attempt(ctx context.Context, retry bool, do func(context.Context, *mcp.ClientSession) error) (err error) {
	defer func() {
		if err != nil && ctx.Err() == nil && u.errs != nil {
			u.errs.add(u.server.ID) // the caller's giving up is not the upstream's failure
		}
	}()
	for attempt := 0; ; attempt++ {
		if err := u.connect(ctx); err != nil {
			return err
		}
		u.mu.Lock()
		cs := u.session
		u.mu.Unlock()
		if cs == nil {
			return fmt.Errorf("connector %s is not connected", u.server.ID)
		}
		cctx, cancel := context.WithTimeout(ctx, u.server.Upstream.Timeout)
		err := do(cctx, cs)
		cancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return fmt.Errorf("connector %s did not answer within %s", u.server.ID, u.server.Upstream.Timeout)
		case ctx.Err() != nil:
			return ctx.Err()
		case attempt == 0 && retry && isBroken(err):
			u.drop(cs)
			continue
		case !retry && isBroken(err):
			u.drop(cs)
			return fmt.Errorf("connector %s closed its connection during the call (has it crashed?); the call is not repeated, since the tool may change something and may have run: %w", u.server.ID, err)
		case isBroken(err):
			// The SDK's words for this are bare ("EOF"): say what happened.
			return fmt.Errorf("connector %s closed its connection during the call, again after reconnecting (has it crashed?): %w", u.server.ID, err)
		case errors.As(err, new(*json.SyntaxError)):
			// The upstream wrote something that is not JSON-RPC (a stray print on a stdio
			// server's stdout): the SDK dropped the connection, and the next call reconnects.
			// This one is not tried again: the tool may have run.
			return fmt.Errorf("connector %s answered with something that is not JSON-RPC, and its connection was dropped: %w", u.server.ID, err)
		}
		return fmt.Errorf("connector %s: %w", u.server.ID, err)
	}
}

// upstreamTransport carries the calls of every HTTP upstream. Sessions share one connection per
// upstream, so many calls to one host are in flight at once: http.DefaultTransport keeps only
// two idle connections per host and would open (and close) a new one for most of them.
var upstreamTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return t
}()

func isBroken(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, errSessionGone) || strings.Contains(err.Error(), "connection closed") ||
		strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "broken pipe")
}

// drop forgets a connection that broke, so the next call dials again.
func (u *upstream) drop(cs *mcp.ClientSession) {
	u.mu.Lock()
	mine := u.session == cs
	if mine {
		u.session = nil
	}
	u.mu.Unlock()
	if mine {
		cs.Close() // outside the lock: a stdio process may take seconds to stop
	}
}

func (u *upstream) close() {
	u.mu.Lock()
	cs := u.session
	u.session = nil
	u.closed = true
	u.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// env is the environment of a command upstream: its plain variables, PATH and HOME, and the
// credential where the connector says; never Warden's whole environment.
func (u *upstream) env() []string {
	up := u.server.Upstream
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range up.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, u.cred.host...)
	if up.CredentialEnv != "" {
		if v := u.credentialValue(); v != "" {
			env = append(env, up.CredentialEnv+"="+v)
		}
	}
	return env
}

// credentialValue is the credential to inject: the connection's, or for the host source the
// first of the connector's host variables.
func (u *upstream) credentialValue() string {
	if v := u.cred.value.Reveal(); v != "" {
		return v
	}
	if len(u.cred.host) > 0 {
		_, v, _ := strings.Cut(u.cred.host[0], "=")
		return v
	}
	return ""
}

// headerTransport adds the credential header to every request of an HTTP upstream.
type headerTransport struct {
	base          http.RoundTripper
	header        string
	prefix, value string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.header != "" && t.value != "" {
		r = r.Clone(r.Context())
		r.Header.Set(t.header, t.prefix+t.value)
	}
	return t.base.RoundTrip(r)
}

// stderrLog passes an upstream command's standard error to the log, line by line.
type stderrLog struct {
	logger    *slog.Logger
	connector string
	buf       []byte
	mu        sync.Mutex
}

func (s *stderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := strings.IndexByte(string(s.buf), '\n')
		if i < 0 {
			if len(s.buf) > 4096 {
				s.buf = s.buf[:0]
			}
			return len(p), nil
		}
		s.logger.Debug("upstream stderr", "connector", s.connector, "line", string(s.buf[:i]))
		s.buf = s.buf[i+1:]
	}
}
